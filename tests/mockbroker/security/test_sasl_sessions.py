"""KIP-368 sessions (lifetime, expiry, re-authentication), OAUTHBEARER's unsecured tokens on the
wire, and password guessing that neither slows other clients nor leaks into the logs."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator

import pytest
from sasl_wire import authenticate, connect, handshake, plain_login, scram_login

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker import MockCluster
from kipwire.mockbroker.security.oauth import unsecured_token

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
LIFETIME_MS = 400
_METADATA = {"topics": None, "allow_auto_topic_creation": False}


@pytest.fixture(scope="module")
def sessions() -> Iterator[MockCluster]:
    """SASL sessions that last LIFETIME_MS (connections.max.reauth.ms)."""
    with MockCluster(
        brokers=1,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanisms=("SCRAM-SHA-256", "PLAIN", "OAUTHBEARER"),
        users=USERS,
        config={"connections.max.reauth.ms": LIFETIME_MS},
    ) as running:
        yield running


def _address(cluster: MockCluster) -> str:
    return cluster.bootstrap_servers.split(",")[0]


def _oauth(token: str) -> bytes:
    return f"n,,\x01auth=Bearer {token}\x01\x01".encode()


def test_the_session_lifetime_is_connections_max_reauth_ms(sessions):
    with connect(_address(sessions)) as client:
        done = scram_login(client, "SCRAM-SHA-256", "alice", "alice-secret")
        assert done["session_lifetime_ms"] == LIFETIME_MS


def test_an_expired_session_is_closed_at_its_next_request(sessions):
    with connect(_address(sessions)) as client:
        plain_login(client, "alice", "alice-secret")
        assert client.call(ApiKey.METADATA, 12, _METADATA)["brokers"]
        time.sleep(LIFETIME_MS / 1000 + 0.2)  # the session's own expiry, not a race
        client.send(ApiKey.METADATA, 12, _METADATA)
        assert client.receive_frame() == b""


def test_re_authentication_renews_the_session(sessions):
    with connect(_address(sessions)) as client:
        plain_login(client, "alice", "alice-secret")
        again = plain_login(client, "alice", "alice-secret")
        assert again["error_code"] == ErrorCode.NONE
        assert again["session_lifetime_ms"] == LIFETIME_MS
        assert client.call(ApiKey.METADATA, 12, _METADATA)["brokers"]


def test_re_authentication_cannot_change_the_principal(sessions):
    with connect(_address(sessions)) as client:
        plain_login(client, "alice", "alice-secret")
        again = plain_login(client, "bob", "bob-secret")
        assert again["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert again["error_message"] == (
            "Cannot change principals during re-authentication from User:alice: User:bob"
        )
        assert client.receive_frame() == b""


def test_an_unsecured_token_authenticates_its_subject_until_it_expires(sessions):
    with connect(_address(sessions)) as client:
        assert handshake(client, "OAUTHBEARER")["error_code"] == ErrorCode.NONE
        done = authenticate(client, _oauth(unsecured_token("carol", lifetime_s=60)))
        assert done["error_code"] == ErrorCode.NONE
        # the shorter of the token's remaining life and connections.max.reauth.ms
        assert done["session_lifetime_ms"] == LIFETIME_MS
        assert client.call(ApiKey.METADATA, 12, _METADATA)["brokers"]


@pytest.mark.parametrize(
    "token",
    [
        unsecured_token("carol", lifetime_s=-10),  # expired
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjYXJvbCJ9.",  # alg HS256
        "not-a-jws",
    ],
)
def test_a_refused_token_gets_the_error_json_then_fails(sessions, token):
    with connect(_address(sessions)) as client:
        handshake(client, "OAUTHBEARER")
        challenge = authenticate(client, _oauth(token))
        assert challenge["error_code"] == ErrorCode.NONE
        assert challenge["auth_bytes"] == b'{"status":"invalid_token"}'
        failed = authenticate(client, b"\x01")
        assert failed["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert failed["error_message"] == '{"status":"invalid_token"}'
        assert client.receive_frame() == b""


def test_password_guessing_leaves_other_clients_served_and_the_logs_clean(sessions, caplog):
    caplog.set_level(logging.DEBUG, logger="kipwire.mockbroker")
    failures: list[int] = []

    def guess() -> None:
        for attempt in range(20):
            with connect(_address(sessions)) as client:
                done = plain_login(client, "alice", f"guess-{attempt}-x")
                failures.append(done["error_code"])

    guessers = [threading.Thread(target=guess) for _ in range(3)]
    for thread in guessers:
        thread.start()
    slowest = 0.0
    deadline = time.monotonic() + 60
    with connect(_address(sessions)) as client:
        while any(t.is_alive() for t in guessers) and time.monotonic() < deadline:
            # re-authenticating each round keeps the short session alive
            assert (
                scram_login(client, "SCRAM-SHA-256", "bob", "bob-secret")["error_code"]
                == ErrorCode.NONE
            )
            started = time.monotonic()
            client.call(ApiKey.METADATA, 12, _METADATA)
            slowest = max(slowest, time.monotonic() - started)
    for thread in guessers:
        thread.join(30)
    assert failures == [ErrorCode.SASL_AUTHENTICATION_FAILED] * 60
    # each failure waits connection.failed.authentication.delay.ms on its own connection only
    assert slowest < 0.5
    assert "guess-" not in caplog.text and "bob-secret" not in caplog.text
