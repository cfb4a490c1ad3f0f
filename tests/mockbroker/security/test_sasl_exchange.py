"""The SASL exchange on the wire, as Kafka's SaslServerAuthenticator answers it: ApiVersions
before authentication, the handshake, PLAIN and SCRAM tokens, Kafka's error codes, messages
and closes, the frame limit before authentication, SaslHandshake v0's bare tokens."""

from __future__ import annotations

import struct
from collections.abc import Iterator

import pytest
from sasl_wire import ScramClient, authenticate, connect, handshake, plain_login, scram_login

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker import MockCluster

USERS = {"alice": "alice-secret", "admin": "admin-secret"}
_VERSIONS = {"client_software_name": "t", "client_software_version": "1"}
_METADATA = {"topics": None, "allow_auto_topic_creation": False}


@pytest.fixture(scope="module")
def sasl() -> Iterator[MockCluster]:
    """SASL_PLAINTEXT with SCRAM-SHA-512 and PLAIN."""
    with MockCluster(
        brokers=1,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanisms=("SCRAM-SHA-512", "PLAIN"),
        users=USERS,
    ) as running:
        yield running


def _address(cluster: MockCluster) -> str:
    return cluster.bootstrap_servers.split(",")[0]


def test_api_versions_is_answered_before_authentication_and_lists_sasl(sasl):
    with connect(_address(sasl)) as client:
        body = client.call(ApiKey.API_VERSIONS, 3, _VERSIONS)
        ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}
        assert ranges[ApiKey.SASL_HANDSHAKE] == (0, 1)
        assert ranges[ApiKey.SASL_AUTHENTICATE] == (0, 2)
        assert (
            scram_login(client, "SCRAM-SHA-512", "alice", "alice-secret")["error_code"]
            == ErrorCode.NONE
        )


def test_a_plaintext_cluster_does_not_list_sasl():
    with MockCluster(brokers=1) as plain, connect(_address(plain)) as client:
        body = client.call(ApiKey.API_VERSIONS, 3, _VERSIONS)
        keys = {k["api_key"] for k in body["api_keys"]}
        assert ApiKey.SASL_HANDSHAKE not in keys and ApiKey.SASL_AUTHENTICATE not in keys


def test_requests_before_authentication_close_the_connection_unanswered(sasl):
    with connect(_address(sasl)) as client:
        client.send(ApiKey.METADATA, 12, _METADATA)
        assert client.receive_frame() == b""


def test_an_unknown_mechanism_is_answered_with_the_enabled_ones_then_closed(sasl):
    with connect(_address(sasl)) as client:
        body = handshake(client, "GSSAPI")
        assert body["error_code"] == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert body["mechanisms"] == ["SCRAM-SHA-512", "PLAIN"]
        assert client.receive_frame() == b""


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "PLAIN"])
def test_authenticated_clients_are_served(sasl, mechanism):
    with connect(_address(sasl)) as client:
        if mechanism == "PLAIN":
            done = plain_login(client, "alice", "alice-secret")
        else:
            done = scram_login(client, mechanism, "alice", "alice-secret")
        assert done["error_code"] == ErrorCode.NONE
        assert done["session_lifetime_ms"] == 0  # connections.max.reauth.ms unset
        assert client.call(ApiKey.METADATA, 12, _METADATA)["brokers"]


def test_a_wrong_scram_password_gets_kafkas_generic_message_and_a_close(sasl):
    with connect(_address(sasl)) as client:
        done = scram_login(client, "SCRAM-SHA-512", "alice", "wrong")
        assert done["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert done["error_message"] == (
            "Authentication failed during authentication due to invalid credentials "
            "with SASL mechanism SCRAM-SHA-512"
        )
        assert client.receive_frame() == b""


def test_an_unknown_scram_user_gets_the_same_answer_as_a_wrong_password(sasl):
    with connect(_address(sasl)) as client:
        done = scram_login(client, "SCRAM-SHA-512", "mallory", "x")
        assert done["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in done["error_message"]


def test_a_wrong_plain_password_gets_plains_own_message(sasl):
    with connect(_address(sasl)) as client:
        done = plain_login(client, "alice", "wrong")
        assert done["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert done["error_message"] == "Authentication failed: Invalid username or password"
        assert client.receive_frame() == b""


def test_another_request_during_authentication_is_illegal_sasl_state(sasl):
    with connect(_address(sasl)) as client:
        handshake(client, "SCRAM-SHA-512")
        body = client.call(
            ApiKey.DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": False}
        )
        assert body["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
        assert client.receive_frame() == b""


def test_sasl_authenticate_after_authentication_is_illegal_sasl_state(sasl):
    with connect(_address(sasl)) as client:
        plain_login(client, "alice", "alice-secret")
        body = authenticate(client, b"\0alice\0alice-secret")
        assert body["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
        assert client.call(ApiKey.METADATA, 12, _METADATA)["brokers"]  # still served


def test_a_100_mb_token_is_refused_by_its_size_before_it_is_read(sasl):
    with connect(_address(sasl)) as client:
        handshake(client, "PLAIN")
        # only the size prefix and a few bytes: the broker must not wait for the rest
        client.send_raw(struct.pack(">i", 100 * 1024 * 1024) + b"\0\x24\0\x02")
        assert client.receive_frame() == b""


def test_handshake_v0_carries_bare_tokens(sasl):
    with connect(_address(sasl)) as client:
        assert handshake(client, "SCRAM-SHA-512", version=0)["error_code"] == ErrorCode.NONE
        scram = ScramClient("SCRAM-SHA-512", "admin", "admin-secret")
        sock = client.connection.socket

        def exchange(token: bytes) -> bytes:
            sock.sendall(struct.pack(">i", len(token)) + token)
            size = struct.unpack(">i", _read(sock, 4))[0]
            return _read(sock, size)

        final = exchange(scram.final(exchange(scram.first())))
        assert final.startswith(b"v=")
        assert client.call(ApiKey.METADATA, 12, _METADATA)["brokers"]


def _read(sock, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, "closed"
        data += chunk
    return data
