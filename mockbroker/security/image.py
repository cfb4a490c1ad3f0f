"""The security part of the metadata log, as brokers and the controller replay it: SCRAM
credentials (UserScramCredentialRecord) and ACLs (AccessControlEntryRecord).

Entries are immutable values in plain mappings, so the controller's copy-on-write drafts can
overlay them like any other registry.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from .scram import MECHANISM_TYPES, ScramCredential
from .tokens import TokenInfo

SCRAM_RECORDS = ("UserScramCredentialRecord", "RemoveUserScramCredentialRecord")
TOKEN_RECORDS = ("DelegationTokenRecord", "RemoveDelegationTokenRecord")
ACL_RECORDS = ("AccessControlEntryRecord", "RemoveAccessControlEntryRecord")


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry (codec enum values)."""

    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    @classmethod
    def from_record(cls, r: Mapping[str, Any]) -> AclBinding:
        """The binding an AccessControlEntryRecord carries."""
        return cls(
            r["resource_type"],
            r["resource_name"],
            r["pattern_type"],
            r["principal"],
            r["host"],
            r["operation"],
            r["permission_type"],
        )

    def creation(self) -> dict[str, Any]:
        """The CreateAcls creation that asks for this binding."""
        return {
            "resource_type": self.resource_type,
            "resource_name": self.resource_name,
            "resource_pattern_type": self.pattern_type,
            "principal": self.principal,
            "host": self.host,
            "operation": self.operation,
            "permission_type": self.permission_type,
        }

    def record(self, acl_id: UUID) -> dict[str, Any]:
        """The AccessControlEntryRecord that adds this binding under `acl_id`."""
        return {
            "id": acl_id,
            "resource_type": self.resource_type,
            "resource_name": self.resource_name,
            "pattern_type": self.pattern_type,
            "principal": self.principal,
            "host": self.host,
            "operation": self.operation,
            "permission_type": self.permission_type,
        }


def replay_security(
    scram: MutableMapping[tuple[str, int], ScramCredential],
    acls: MutableMapping[UUID, AclBinding],
    tokens: MutableMapping[str, TokenInfo],
    name: str,
    r: Mapping[str, Any],
) -> None:
    """Apply one security record to the credential, ACL and delegation token registries."""
    if name == "DelegationTokenRecord":
        tokens[r["token_id"]] = TokenInfo.from_record(r)
    elif name == "RemoveDelegationTokenRecord":
        tokens.pop(r["token_id"], None)
    elif name == "UserScramCredentialRecord":
        scram[r["name"], r["mechanism"]] = ScramCredential(
            bytes(r["salt"]), bytes(r["stored_key"]), bytes(r["server_key"]), r["iterations"]
        )
    elif name == "RemoveUserScramCredentialRecord":
        scram.pop((r["name"], r["mechanism"]), None)
    elif name == "AccessControlEntryRecord":
        acls[r["id"]] = AclBinding.from_record(r)
    elif name == "RemoveAccessControlEntryRecord":
        acls.pop(r["id"], None)


class SecurityImage:
    """A broker's SCRAM credentials and ACLs, by replay."""

    def __init__(self) -> None:
        self.scram: dict[tuple[str, int], ScramCredential] = {}
        self.acls: dict[UUID, AclBinding] = {}
        self.tokens: dict[str, TokenInfo] = {}
        #: Bumped on every ACL change (an authorizer caches its index per version).
        self.acl_version = 0

    def replay(self, name: str, record: Mapping[str, Any]) -> None:
        """Apply one security record."""
        replay_security(self.scram, self.acls, self.tokens, name, record)
        if name in ACL_RECORDS:
            self.acl_version += 1

    def credential(self, user: str, mechanism: str) -> ScramCredential | None:
        """A user's credential for a SCRAM mechanism name, None when there is none."""
        return self.scram.get((user, MECHANISM_TYPES[mechanism]))
