"""Recordings of secured clusters: frames on the plaintext side of TLS, secrets replaced by
`*` bytes of the same length (PLAIN passwords, OAUTHBEARER tokens, SCRAM proofs)."""

from __future__ import annotations

import base64

from sasl_wire import ScramClient, authenticate, connect, handshake, plain_login, scram_login

from kipwire.captures import decode_capture
from kipwire.captures.decoding.redaction import is_redacted_token
from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker import MockCluster
from kipwire.mockbroker.security.oauth import unsecured_token
from kipwire.mockbroker.security.redaction import redact_token

USERS = {"alice": "alice-secret-password"}


def test_redact_token_keeps_lengths():
    assert redact_token("PLAIN", b"\0alice\0pw") == b"\0alice\0**"
    assert redact_token("OAUTHBEARER", b"n,,\x01auth=Bearer abc.def.\x01\x01") == (
        b"n,,\x01auth=Bearer ********\x01\x01"
    )
    assert redact_token("SCRAM-SHA-256", b"c=biws,r=xyz,p=UHJvb2Y=") == b"c=biws,r=xyz,p=********"
    assert redact_token("SCRAM-SHA-256", b"n,,n=alice,r=xyz") == b"n,,n=alice,r=xyz"


def test_a_redacted_token_is_told_from_a_real_one():
    for mechanism, token in (
        ("PLAIN", b"\0alice\0pw"),
        ("OAUTHBEARER", b"n,,\x01auth=Bearer abc.def.\x01\x01"),
        ("SCRAM-SHA-256", b"c=biws,r=xyz,p=UHJvb2Y="),
    ):
        assert not is_redacted_token(token)
        assert is_redacted_token(redact_token(mechanism, token))
    assert not is_redacted_token(b"n,,n=alice,r=xyz")  # SCRAM's first message holds no secret


def test_a_recording_holds_no_secret(tmp_path):
    path = tmp_path / "secured.pcapng"
    token = unsecured_token("carol")
    with MockCluster(
        brokers=1,
        security_protocol="SASL_SSL",
        sasl_mechanisms=("PLAIN", "SCRAM-SHA-512", "OAUTHBEARER"),
        users=USERS,
        record=str(path),
    ) as cluster:
        address, ca = cluster.bootstrap_servers, cluster.ssl_ca_location
        with connect(address, ca=ca) as client:
            assert plain_login(client, "alice", USERS["alice"])["error_code"] == ErrorCode.NONE
            client.call(ApiKey.METADATA, 12, {"topics": None})
        with connect(address, ca=ca) as client:
            assert (
                scram_login(client, "SCRAM-SHA-512", "alice", USERS["alice"])["error_code"]
                == ErrorCode.NONE
            )
        with connect(address, ca=ca) as client:
            handshake(client, "OAUTHBEARER")
            response = f"n,,\x01auth=Bearer {token}\x01\x01".encode()
            assert authenticate(client, response)["error_code"] == ErrorCode.NONE
        proof = ScramClient("SCRAM-SHA-512", "alice", USERS["alice"])
    recorded = path.read_bytes()
    assert USERS["alice"].encode() not in recorded
    assert b"\0alice\0" + b"*" * len(USERS["alice"]) in recorded
    assert token.encode() not in recorded
    assert b"auth=Bearer " + b"*" * len(token) in recorded
    assert b",p=" + b"*" * len(base64.b64encode(bytes(64))) in recorded
    assert proof.first_bare.encode() in recorded  # the rest of the exchange is kept
    # decoded, the three secret-bearing SaslAuthenticate requests say they were redacted
    rows = decode_capture(str(path), broker_ports={int(address.rsplit(":", 1)[1])})
    sasl = [
        r["redacted"]
        for r in rows.pdus
        if r["api_name"] == "SaslAuthenticate" and r["direction"] == "request"
    ]
    assert sorted(sasl) == [False, True, True, True]  # SCRAM's client-first is not a secret
    assert not any(r["redacted"] for r in rows.pdus if r["api_name"] != "SaslAuthenticate")
