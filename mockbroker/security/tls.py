"""TLS for the mock's client-facing listeners: a test CA made at start-up, the brokers' server
context, client certificates for mTLS, and the principal a client certificate names.

The CA (`trustme`) signs one server certificate valid for 127.0.0.1 and localhost, which every
broker and the controller's external listener present. Files live in a temporary directory the
cluster removes when it stops. The principal of an mTLS client is its certificate's subject as
Kafka's default principal builder makes it: `User:` and the RFC 2253 distinguished name
(`X500Principal.getName()`, most specific RDN first), e.g. `User:CN=alice,OU=mock,O=kipwire`.
"""

from __future__ import annotations

import re
import shutil
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

#: The organisation fields of every client certificate: the DN is `CN=<user>,OU=mock,O=kipwire`.
CLIENT_ORGANIZATION = "kipwire"
CLIENT_UNIT = "mock"
ANONYMOUS = "User:ANONYMOUS"
#: Every client certificate's subject alternative name (the DN, not the SAN, names the user).
CLIENT_SAN = "client.kipwire.invalid"
CLIENT_AUTH = ("none", "requested", "required")
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


def client_dn(user: str) -> str:
    """The distinguished name of `client_cert(user)`, as Kafka's principal builder writes it."""
    return f"CN={_escape_rdn(user)},OU={CLIENT_UNIT},O={CLIENT_ORGANIZATION}"


def _escape_rdn(value: str) -> str:
    # RFC 2253 escapes, as X500Principal.getName() applies them to an attribute value
    out = "".join("\\" + c if c in ',+"\\<>;=' else c for c in value)
    if out.startswith((" ", "#")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


@dataclass(frozen=True)
class ServerFiles:
    """The listeners' certificate as files: what a node in another process (process mode)
    serves TLS with, without the CA's signing key."""

    #: The CA's PEM (trusted for client certificates under mTLS).
    ca_path: str
    #: The server's private key and certificate chain in one PEM.
    cert_path: str

    def server_context(self, client_auth: str = "none") -> ssl.SSLContext:
        """A listener's context; `client_auth` is Kafka's ssl.client.auth (none, requested,
        required), which asks for (and with `required` insists on) a certificate of this CA."""
        if client_auth not in CLIENT_AUTH:
            raise ValueError(f"ssl_client_auth must be one of {CLIENT_AUTH}, got {client_auth!r}")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert_path)
        if client_auth != "none":
            context.load_verify_locations(self.ca_path)
            context.verify_mode = (
                ssl.CERT_REQUIRED if client_auth == "required" else ssl.CERT_OPTIONAL
            )
        return context


class CertificateAuthority:
    """A test CA and the files clients need: its PEM, the brokers' certificate, client certs."""

    def __init__(self) -> None:
        import trustme  # only clusters with TLS pay for the import

        self._ca = trustme.CA(organization_name=CLIENT_ORGANIZATION)
        self._dir = Path(tempfile.mkdtemp(prefix="kipwire-tls-"))
        self.ca_path = str(self._dir / "ca.pem")
        self._ca.cert_pem.write_to_path(self.ca_path)
        server = self._ca.issue_cert("127.0.0.1", "localhost")
        server_path = str(self._dir / "server.pem")
        server.private_key_and_cert_chain_pem.write_to_path(server_path)
        #: The listeners' certificate files, which every broker and the controller serve.
        self.files = ServerFiles(self.ca_path, server_path)
        self._clients: dict[str, tuple[str, str]] = {}

    def server_context(self, client_auth: str = "none") -> ssl.SSLContext:
        """The listeners' context (see `ServerFiles.server_context`)."""
        return self.files.server_context(client_auth)

    def client_cert(self, user: str) -> tuple[str, str]:
        """(certificate path, key path) of a client certificate for `user` (made once)."""
        if user not in self._clients:
            # a SAN of its own: Java refuses a certificate whose SAN extension is empty
            leaf = self._ca.issue_cert(
                CLIENT_SAN,
                common_name=user,
                organization_name=CLIENT_ORGANIZATION,
                organization_unit_name=CLIENT_UNIT,
            )
            stem = self._dir / f"client-{_SAFE.sub('_', user)}-{len(self._clients)}"
            cert, key = f"{stem}.pem", f"{stem}.key"
            leaf.cert_chain_pems[0].write_to_path(cert)
            leaf.private_key_pem.write_to_path(key)
            # Java's PEM keystore (ssl.keystore.type=PEM) wants the key and the chain in one file
            Path(f"{stem}.keystore.pem").write_bytes(
                pkcs8(leaf.private_key_pem.bytes()) + leaf.cert_chain_pems[0].bytes()
            )
            self._clients[user] = (cert, key)
        return self._clients[user]

    def keystore(self, user: str) -> str:
        """The key and certificate of `client_cert(user)` in one PEM file (Java's keystore)."""
        cert, _ = self.client_cert(user)
        return cert[: -len(".pem")] + ".keystore.pem"

    def close(self) -> None:
        """Remove the files."""
        shutil.rmtree(self._dir, ignore_errors=True)


def pkcs8(key_pem: bytes) -> bytes:
    """A PEM private key as unencrypted PKCS#8, the form Java's PEM keystore reads."""
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(key_pem, password=None)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def certificate_principal(der: bytes | None) -> str:
    """`User:<DN>` of a verified client certificate (DER), `User:ANONYMOUS` without one."""
    if not der:
        return ANONYMOUS
    from cryptography import x509

    return "User:" + x509.load_der_x509_certificate(der).subject.rfc4514_string()
