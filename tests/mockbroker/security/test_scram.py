"""SCRAM's server side against RFC 7677's SCRAM-SHA-256 example and a client of its own."""

from __future__ import annotations

import base64

import pytest
from sasl_wire import ScramClient

from kipwire.mockbroker.security.errors import AuthenticationFailed
from kipwire.mockbroker.security.scram import ScramServer, make_credential

# RFC 7677 section 3: user "user", password "pencil"
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def _server(password: str = "pencil") -> ScramServer:
    credential = make_credential("SCRAM-SHA-256", password, 4096, SALT)
    return ScramServer(
        "SCRAM-SHA-256", lambda user: credential if user == "user" else None, SERVER_NONCE
    )


def test_rfc_7677_exchange():
    server = _server()
    first = server.evaluate(CLIENT_FIRST)
    assert first == (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    assert server.evaluate(CLIENT_FINAL) == SERVER_FINAL
    assert server.complete and server.user == "user"


def test_a_wrong_password_fails_with_kafkas_generic_answer():
    server = _server(password="not-pencil")
    server.evaluate(CLIENT_FIRST)
    with pytest.raises(AuthenticationFailed) as failed:
        server.evaluate(CLIENT_FINAL)
    assert failed.value.generic and not server.complete


def test_an_unknown_user_fails_like_a_wrong_password():
    with pytest.raises(AuthenticationFailed) as failed:
        _server().evaluate(b"n,,n=mallory,r=abc")
    assert failed.value.generic


def test_a_different_authorization_id_is_refused_with_kafkas_message():
    with pytest.raises(AuthenticationFailed) as failed:
        _server().evaluate(b"n,a=admin,n=user,r=abc")
    assert not failed.value.generic
    assert "authorization id that is different from username" in str(failed.value)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_client_of_our_own_authenticates(mechanism):
    credential = make_credential(mechanism, "s3cret", 8192)
    server = ScramServer(mechanism, lambda user: credential)
    client = ScramClient(mechanism, "alice", "s3cret")
    final = server.evaluate(client.final(server.evaluate(client.first())))
    assert final == b"v=" + base64.b64encode(client.server_signature)


@pytest.mark.parametrize(
    "message", [b"garbage", b"n,,r=abc", b"x,,n=u,r=a", b"n,,n=a=b,r=c", b"\xff\xfe"]
)
def test_malformed_client_first_messages_are_refused(message):
    with pytest.raises(AuthenticationFailed):
        _server().evaluate(message)


def test_a_tampered_nonce_or_channel_binding_is_refused():
    for final in (
        CLIENT_FINAL.replace(b"r=rOpr", b"r=xOpr"),
        CLIENT_FINAL.replace(b"c=biws", b"c=eSws"),
    ):
        server = _server()
        server.evaluate(CLIENT_FIRST)
        with pytest.raises(AuthenticationFailed):
            server.evaluate(final)
