"""Delegation tokens (KIP-48) as Kafka keeps them (sans-I/O): a token id, its HMAC-SHA512
under the cluster's `delegation.token.secret.key`, and the SCRAM credential a client proves
with `tokenauth=true`, the token id as its user name and the base64 HMAC as its password.

The metadata log holds DelegationTokenRecords without the HMAC; every node that knows the
secret computes it from the token id, as Kafka's brokers and controllers do.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .scram import ScramCredential, make_credential

#: Kafka's defaults: delegation.token.max.lifetime.ms (7 days), .expiry.time.ms (1 day).
MAX_LIFETIME_MS = 7 * 24 * 3600 * 1000
EXPIRY_TIME_MS = 24 * 3600 * 1000
#: Kafka derives token credentials with SCRAM's minimum iterations.
TOKEN_ITERATIONS = 4096


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """A delegation token as DelegationTokenRecord describes it (principals as `User:name`)."""

    token_id: str
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_ms: int
    max_ms: int
    expiry_ms: int

    @classmethod
    def from_record(cls, r: Mapping[str, Any]) -> TokenInfo:
        """The token a DelegationTokenRecord carries."""
        return cls(
            r["token_id"],
            r["owner"],
            r["requester"],
            tuple(r["renewers"]),
            r["issue_timestamp"],
            r["max_timestamp"],
            r["expiration_timestamp"],
        )

    def record(self) -> dict[str, Any]:
        """The DelegationTokenRecord of this token."""
        return {
            "token_id": self.token_id,
            "owner": self.owner,
            "requester": self.requester,
            "renewers": list(self.renewers),
            "issue_timestamp": self.issue_ms,
            "max_timestamp": self.max_ms,
            "expiration_timestamp": self.expiry_ms,
        }


def new_token_id() -> str:
    """A token id as Kafka makes one: a random UUID, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def token_hmac(secret: bytes, token_id: str) -> bytes:
    """The token's HMAC-SHA512 under the cluster's secret."""
    return hmac.digest(secret, token_id.encode(), "sha512")


def token_credential(secret: bytes, token_id: str, mechanism: str) -> ScramCredential:
    """The SCRAM credential of a token: its base64 HMAC is the password (a salt derived from
    the id keeps both messages of one exchange, and every node, on the same credential)."""
    password = base64.b64encode(token_hmac(secret, token_id)).decode()
    salt = hashlib.sha256(token_id.encode()).digest()[:16]
    return make_credential(mechanism, password, TOKEN_ITERATIONS, salt)


def find_by_hmac(secret: bytes, tokens: Mapping[str, TokenInfo], mac: bytes) -> TokenInfo | None:
    """The token whose HMAC is `mac`, None when there is none."""
    for token in tokens.values():
        if hmac.compare_digest(token_hmac(secret, token.token_id), mac):
            return token
    return None


def split_principal(principal: str) -> tuple[str, str]:
    """`User:alice` -> ("User", "alice")."""
    kind, _, name = principal.partition(":")
    return kind, name
