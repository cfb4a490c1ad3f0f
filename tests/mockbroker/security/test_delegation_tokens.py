"""Delegation tokens (KIP-48) on the wire: created for the requester through the controller,
listed by DescribeDelegationToken on every broker, a SCRAM login with `tokenauth=true` making
the owner the principal for the token's lifetime, renewal and expiry by its owner only, and
Kafka's refusals (a token-authenticated connection, another user's token)."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest
from sasl_wire import ScramClient, authenticate, connect, handshake, scram_login

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker import MockCluster

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
_CREATE = {"renewers": [], "max_lifetime_ms": -1}


@pytest.fixture(scope="module")
def tokens() -> Iterator[MockCluster]:
    """Two brokers, SASL/SCRAM-SHA-256: delegation tokens on."""
    with MockCluster(
        brokers=2,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanisms=("SCRAM-SHA-256",),
        users=USERS,
    ) as running:
        yield running


def _broker(cluster: MockCluster, index: int) -> str:
    return cluster.bootstrap_servers.split(",")[index]


def _as(cluster: MockCluster, user: str, index: int = 0):
    client = connect(_broker(cluster, index))
    assert scram_login(client, "SCRAM-SHA-256", user, USERS[user])["error_code"] == ErrorCode.NONE
    return client


def _token_login(cluster: MockCluster, token_id: str, mac: bytes, index: int = 1):
    client = connect(_broker(cluster, index))
    handshake(client, "SCRAM-SHA-256")
    scram = ScramClient("SCRAM-SHA-256", token_id, base64.b64encode(mac).decode())
    scram.first_bare += ",tokenauth=true"
    first = authenticate(client, scram.first())
    if first["error_code"] != ErrorCode.NONE:
        return client, first
    return client, authenticate(client, scram.final(first["auth_bytes"]))


def test_the_token_apis_are_listed_on_sasl_scram_clusters(tokens):
    with _as(tokens, "alice") as client:
        body = client.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "t"})
    ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}
    assert ranges[ApiKey.CREATE_DELEGATION_TOKEN] == (1, 3)
    assert ranges[ApiKey.DESCRIBE_DELEGATION_TOKEN] == (1, 3)
    assert ranges[ApiKey.RENEW_DELEGATION_TOKEN] == ranges[ApiKey.EXPIRE_DELEGATION_TOKEN] == (1, 2)


def test_a_token_authenticates_its_owner(tokens):
    with _as(tokens, "alice") as alice:
        created = alice.call(ApiKey.CREATE_DELEGATION_TOKEN, 3, _CREATE)
    assert created["error_code"] == ErrorCode.NONE
    assert (created["principal_type"], created["principal_name"]) == ("User", "alice")
    assert created["expiry_timestamp_ms"] <= created["max_timestamp_ms"]
    with _as(tokens, "bob", index=1) as bob:  # the other broker replayed it
        # no authorizer: as in Kafka, anyone may describe any token
        owners = [{"principal_type": "User", "principal_name": "alice"}]
        listed = bob.call(ApiKey.DESCRIBE_DELEGATION_TOKEN, 3, {"owners": owners})
        assert created["token_id"] in [t["token_id"] for t in listed["tokens"]]
        assert all(t["principal_name"] == "alice" for t in listed["tokens"])
    client, done = _token_login(tokens, created["token_id"], created["hmac"])
    with client:
        assert done["error_code"] == ErrorCode.NONE
        # the token's remaining life is the session's (KIP-368)
        assert 0 < done["session_lifetime_ms"] <= created["expiry_timestamp_ms"]
        refused = client.call(ApiKey.CREATE_DELEGATION_TOKEN, 3, _CREATE)
        assert refused["error_code"] == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED


def test_only_the_owner_or_a_renewer_renews_and_an_expired_token_fails(tokens):
    with _as(tokens, "alice") as alice, _as(tokens, "bob") as bob:
        created = alice.call(ApiKey.CREATE_DELEGATION_TOKEN, 3, _CREATE)
        mac = created["hmac"]
        stolen = bob.call(ApiKey.RENEW_DELEGATION_TOKEN, 2, {"hmac": mac, "renew_period_ms": 1000})
        assert stolen["error_code"] == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
        renewed = alice.call(
            ApiKey.RENEW_DELEGATION_TOKEN, 2, {"hmac": mac, "renew_period_ms": 5000}
        )
        assert renewed["error_code"] == ErrorCode.NONE
        assert renewed["expiry_timestamp_ms"] < created["expiry_timestamp_ms"]
        expired = alice.call(
            ApiKey.EXPIRE_DELEGATION_TOKEN, 2, {"hmac": mac, "expiry_time_period_ms": -1}
        )
        assert expired["error_code"] == ErrorCode.NONE
        again = alice.call(ApiKey.RENEW_DELEGATION_TOKEN, 2, {"hmac": mac, "renew_period_ms": 1})
        assert again["error_code"] == ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    client, done = _token_login(tokens, created["token_id"], mac)
    with client:
        assert done["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED


def test_a_renewer_sees_and_renews_the_token(tokens):
    renewer = {"principal_type": "User", "principal_name": "bob"}
    with _as(tokens, "alice") as alice, _as(tokens, "bob") as bob:
        created = alice.call(ApiKey.CREATE_DELEGATION_TOKEN, 3, {**_CREATE, "renewers": [renewer]})
        listed = bob.call(ApiKey.DESCRIBE_DELEGATION_TOKEN, 3, {"owners": None})
        assert created["token_id"] in [t["token_id"] for t in listed["tokens"]]
        renewed = bob.call(
            ApiKey.RENEW_DELEGATION_TOKEN, 2, {"hmac": created["hmac"], "renew_period_ms": 60000}
        )
        assert renewed["error_code"] == ErrorCode.NONE
        bad = alice.call(
            ApiKey.CREATE_DELEGATION_TOKEN,
            3,
            {**_CREATE, "renewers": [{"principal_type": "Group", "principal_name": "x"}]},
        )
        assert bad["error_code"] == ErrorCode.INVALID_PRINCIPAL_TYPE


def test_plain_only_clusters_have_no_tokens():
    with MockCluster(
        brokers=1, security_protocol="SASL_PLAINTEXT", sasl_mechanisms=("PLAIN",), users=USERS
    ) as plain:
        from sasl_wire import plain_login

        with connect(plain.bootstrap_servers) as client:
            plain_login(client, "alice", "alice-secret")
            body = client.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "t"})
    assert ApiKey.CREATE_DELEGATION_TOKEN not in {k["api_key"] for k in body["api_keys"]}
