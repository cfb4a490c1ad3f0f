"""TLS listeners: what a client certificate makes of the principal, mTLS refusing clients
without one, and hostile transport input (plaintext to a TLS port, a handshake that stops
half-way) closing that one connection while every other client is served."""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from sasl_wire import connect, scram_login

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker import MockCluster
from kipwire.mockbroker.security import listener
from kipwire.mockbroker.security.tls import certificate_principal, client_dn

_METADATA = {"topics": None, "allow_auto_topic_creation": False}


@pytest.fixture(scope="module")
def tls() -> Iterator[MockCluster]:
    """SSL listeners, no client certificates asked."""
    with MockCluster(brokers=1, security_protocol="SSL") as running:
        yield running


def _address(cluster: MockCluster) -> tuple[str, int]:
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    return host, int(port)


def _served(cluster: MockCluster) -> bool:
    with connect(cluster.bootstrap_servers.split(",")[0], ca=cluster.ssl_ca_location) as client:
        return bool(client.call(ApiKey.METADATA, 12, _METADATA)["brokers"])


def test_the_certificate_names_127_0_0_1_and_localhost(tls):
    context = ssl.create_default_context(cafile=tls.ssl_ca_location)
    for name in ("127.0.0.1", "localhost"):
        with (
            socket.create_connection(_address(tls), timeout=5) as raw,
            context.wrap_socket(raw, server_hostname=name) as wrapped,
        ):
            assert wrapped.version() in ("TLSv1.2", "TLSv1.3")


def test_a_client_certificate_names_its_principal_as_kafka_does(tls):
    cert, _ = tls.client_cert("alice")
    der = x509.load_pem_x509_certificate(Path(cert).read_bytes()).public_bytes(serialization_der())
    assert certificate_principal(der) == "User:CN=alice,OU=mock,O=kipwire"
    assert client_dn("a,b") == "CN=a\\,b,OU=mock,O=kipwire"
    assert certificate_principal(None) == "User:ANONYMOUS"


def serialization_der():
    from cryptography.hazmat.primitives.serialization import Encoding

    return Encoding.DER


def test_plaintext_sent_to_a_tls_listener_is_dropped(tls):
    # no TLS: a Kafka request in the clear
    with connect(tls.bootstrap_servers.split(",")[0]) as client:
        client.send(ApiKey.API_VERSIONS, 0, {})
        assert client.receive_frame() == b""
    assert _served(tls)


def test_a_handshake_that_stops_half_way_is_dropped_after_the_timeout(tls, monkeypatch):
    monkeypatch.setattr(listener, "HANDSHAKE_TIMEOUT", 0.5)
    with socket.create_connection(_address(tls), timeout=5) as raw:
        raw.sendall(b"\x16\x03\x01\x02\x00\x01")  # the start of a ClientHello, then silence
        assert _served(tls)  # other clients meanwhile
        started = time.monotonic()
        assert raw.recv(100) == b""
        assert time.monotonic() - started < 4


def test_mtls_refuses_a_client_without_a_certificate():
    with MockCluster(brokers=1, security_protocol="SSL", ssl_client_auth="required") as mtls:
        context = ssl.create_default_context(cafile=mtls.ssl_ca_location)
        assert _refused(_address(mtls), context)
        context.load_cert_chain(*mtls.client_cert("alice"))
        with (
            socket.create_connection(_address(mtls), timeout=5) as raw,
            context.wrap_socket(raw, server_hostname="127.0.0.1") as wrapped,
        ):
            assert wrapped.getpeercert() is not None


def _refused(address: tuple[str, int], context: ssl.SSLContext) -> bool:
    try:
        with (
            socket.create_connection(address, timeout=5) as raw,
            context.wrap_socket(raw, server_hostname="127.0.0.1") as wrapped,
        ):
            # TLS 1.3 reports a refused client certificate at the first read
            wrapped.sendall(b"\0\0\0\0")
            return wrapped.recv(10) == b""
    except (ssl.SSLError, ConnectionError):
        return True


def test_ssl_client_auth_needs_a_tls_protocol():
    with pytest.raises(ValueError, match="needs an SSL protocol"):
        MockCluster(security_protocol="SASL_PLAINTEXT", ssl_client_auth="required")
    with pytest.raises(ValueError, match="security_protocol must be one of"):
        MockCluster(security_protocol="KERBEROS")


def test_the_controller_listener_is_secured_like_the_brokers():
    with MockCluster(
        brokers=1,
        security_protocol="SASL_SSL",
        sasl_mechanisms=("SCRAM-SHA-256",),
        users={"alice": "alice-secret"},
    ) as cluster:
        controller = cluster.cluster.controller_node.address
        with connect(controller, ca=cluster.ssl_ca_location) as client:
            body = client.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "t"})
            listed = {k["api_key"] for k in body["api_keys"]}
            assert {ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE} <= listed
            done = scram_login(client, "SCRAM-SHA-256", "alice", "alice-secret")
            assert done["error_code"] == ErrorCode.NONE
            again = client.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "t"})
            assert again["error_code"] == ErrorCode.NONE
        with connect(controller) as plain:  # plaintext to it: dropped
            plain.send(ApiKey.API_VERSIONS, 0, {})
            assert plain.receive_frame() == b""
