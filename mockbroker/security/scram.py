"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka's ScramSaslServer runs them.

Credentials are stored as Kafka stores them (UserScramCredentialRecord): salt, iterations,
StoredKey = H(HMAC(SaltedPassword, "Client Key")), ServerKey = HMAC(SaltedPassword,
"Server Key"); the password itself is never kept. `ScramServer` is sans-I/O: client messages
in, server messages out, `AuthenticationFailed` when the proof does not match.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from .errors import AuthenticationFailed

HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
#: The mechanism's type in UserScramCredentialRecord and the KIP-554 APIs.
MECHANISM_TYPES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
_INVALID = "Authentication failed: Invalid user credentials"
#: A delegation token by id: (owner's name, its credential, ms left), None when unknown/expired.
TokenLookup = Callable[[str], "tuple[str, ScramCredential, int] | None"]
_ATTRIBUTE = re.compile(r"^([a-zA-Z][a-zA-Z0-9]*)=(.*)$", re.S)


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """One user's salted credential for one mechanism."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def make_credential(
    mechanism: str, password: str, iterations: int, salt: bytes | None = None
) -> ScramCredential:
    """Salt and hash a password as Kafka's ScramFormatter does."""
    name = HASHES[mechanism]
    salt = os.urandom(32) if salt is None else salt
    salted = hashlib.pbkdf2_hmac(name, password.encode(), salt, iterations)
    return credential_from_salted(mechanism, salted, salt, iterations)


def credential_from_salted(
    mechanism: str, salted: bytes, salt: bytes, iterations: int
) -> ScramCredential:
    """A credential from a salted password (AlterUserScramCredentials sends that, not the
    password)."""
    name = HASHES[mechanism]
    client_key = hmac.digest(salted, b"Client Key", name)
    stored_key = hashlib.new(name, client_key).digest()
    server_key = hmac.digest(salted, b"Server Key", name)
    return ScramCredential(salt, stored_key, server_key, iterations)


def _attributes(message: str) -> list[tuple[str, str]]:
    out = []
    for part in message.split(","):
        match = _ATTRIBUTE.match(part)
        if match is None:
            raise AuthenticationFailed(f"Invalid SCRAM message: {part[:20]!r}", generic=True)
        out.append((match.group(1), match.group(2)))
    return out


def _saslname(value: str) -> str:
    # RFC 5802 5.1: "=2C" is "," and "=3D" is "="; any other "=" is malformed
    if re.search(r"=(?!2C|3D)", value):
        raise AuthenticationFailed("Invalid username in SCRAM message", generic=True)
    return value.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """The server side of one SCRAM exchange: `first` then `final`; `user` once it succeeded.

    `lookup(user)` gives the user's credential for this mechanism, None when there is none;
    extensions (`tokenauth=true` for delegation tokens) are kept in `extensions`.
    """

    def __init__(
        self,
        mechanism: str,
        lookup: Callable[[str], ScramCredential | None],
        nonce: str = "",
        tokens: TokenLookup | None = None,
    ) -> None:
        self.mechanism = mechanism
        self._hash = HASHES[mechanism]
        self._lookup = lookup
        self._tokens = tokens
        #: Whether the client proved a delegation token (`tokenauth=true`).
        self.token_authenticated = False
        self._server_nonce = nonce or base64.b64encode(os.urandom(24)).decode()
        self._state = "first"
        self._credential: ScramCredential | None = None
        self._messages: list[str] = []
        self._gs2 = ""
        self._nonce = ""
        self.user: str | None = None
        self.extensions: dict[str, str] = {}
        #: Set for delegation tokens, which expire; a password credential does not.
        self.lifetime_ms: int | None = None

    @property
    def complete(self) -> bool:
        """Whether the exchange ended in success."""
        return self._state == "done"

    def evaluate(self, token: bytes) -> bytes:
        """The server's answer to the client's next message."""
        try:
            text = token.decode()
        except UnicodeDecodeError:
            raise AuthenticationFailed("SCRAM messages are UTF-8", generic=True) from None
        if self._state == "first":
            return self._first(text)
        if self._state == "final":
            return self._final(text)
        raise AuthenticationFailed("Unexpected SCRAM message after the exchange", generic=True)

    def _first(self, text: str) -> bytes:
        # gs2-header: cbind-flag "," [authzid] ","; Kafka refuses channel binding
        parts = text.split(",", 2)
        if len(parts) != 3 or parts[0] not in ("n", "y"):
            raise AuthenticationFailed("Invalid SCRAM client first message", generic=True)
        self._gs2 = f"{parts[0]},{parts[1]},"
        bare = parts[2]
        attrs = _attributes(bare)
        if len(attrs) < 2 or attrs[0][0] != "n" or attrs[1][0] != "r" or not attrs[1][1]:
            raise AuthenticationFailed("Invalid SCRAM client first message", generic=True)
        user = _saslname(attrs[0][1])
        authzid = parts[1][2:] if parts[1].startswith("a=") else ""
        if authzid and _saslname(authzid) != user:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        self.extensions = {k: v for k, v in attrs[2:]}
        if self.extensions.get("tokenauth", "").lower() == "true":
            # the token id is the user name; the token's owner becomes the principal
            found = self._tokens(user) if self._tokens is not None else None
            if found is None:
                raise AuthenticationFailed(
                    f"Token Authentication failed: Invalid tokenId : {user}", generic=True
                )
            owner, credential, self.lifetime_ms = found
            self.token_authenticated = True
        else:
            owner, credential = user, self._lookup(user)
        if credential is None:
            raise AuthenticationFailed(_INVALID, generic=True)
        self._credential = credential
        self.user = owner
        self._nonce = attrs[1][1] + self._server_nonce
        salt = base64.b64encode(credential.salt).decode()
        server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        self._messages = [bare, server_first]
        self._state = "final"
        return server_first.encode()

    def _final(self, text: str) -> bytes:
        assert self._credential is not None
        attrs = _attributes(text)
        fields = dict(attrs)
        if [k for k, _ in attrs[:2]] != ["c", "r"] or attrs[-1][0] != "p":
            raise AuthenticationFailed("Invalid SCRAM client final message", generic=True)
        if fields["c"] != base64.b64encode(self._gs2.encode()).decode():
            raise AuthenticationFailed("Invalid channel binding in SCRAM message", generic=True)
        if fields["r"] != self._nonce:
            raise AuthenticationFailed("Invalid nonce in SCRAM message", generic=True)
        without_proof = text[: text.rindex(",p=")]
        auth_message = ",".join([*self._messages, without_proof]).encode()
        try:
            proof = base64.b64decode(fields["p"], validate=True)
        except ValueError:
            raise AuthenticationFailed("Invalid SCRAM client proof", generic=True) from None
        signature = hmac.digest(self._credential.stored_key, auth_message, self._hash)
        if len(proof) != len(signature):
            raise AuthenticationFailed(_INVALID, generic=True)
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        stored = hashlib.new(self._hash, client_key).digest()
        if not hmac.compare_digest(stored, self._credential.stored_key):
            raise AuthenticationFailed(_INVALID, generic=True)
        server_signature = hmac.digest(self._credential.server_key, auth_message, self._hash)
        self._state = "done"
        return b"v=" + base64.b64encode(server_signature)
