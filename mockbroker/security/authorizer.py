"""Kafka's StandardAuthorizer rules over the replayed ACLs (sans-I/O).

A request is allowed when the principal is a super user, or when no DENY ACL and at least one
ALLOW ACL match; with no matching ALLOW it is denied (`allow.everyone.if.no.acl.found` is
false, Kafka's default). An ACL matches when:

- its resource type is the resource's, and its pattern matches the name: LITERAL equal to the
  name or `*`, PREFIXED a prefix of the name;
- its principal is the request's or `User:*`; its host is the client's address or `*`;
- its operation is the one asked or ALL; an ALLOW of READ, WRITE, DELETE or ALTER also allows
  DESCRIBE, and an ALLOW of ALTER_CONFIGS also allows DESCRIBE_CONFIGS (implied operations).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from uuid import UUID

from kipwire.codec import AclOperation, AclPermissionType, AclResourceType, PatternType

from .image import AclBinding

CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
_IMPLIES = {
    AclOperation.DESCRIBE: frozenset(
        (AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER)
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset((AclOperation.ALTER_CONFIGS,)),
}
#: The operations whose bits `*_authorized_operations` may carry, per resource type.
RESOURCE_OPERATIONS = {
    AclResourceType.TOPIC: (
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    AclResourceType.GROUP: (
        AclOperation.READ,
        AclOperation.DELETE,
        AclOperation.DESCRIBE,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    AclResourceType.CLUSTER: (
        AclOperation.CREATE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
        AclOperation.CREATE_TOKENS,
        AclOperation.DESCRIBE_TOKENS,
    ),
}


def _pattern_matches(acl: AclBinding, name: str) -> bool:
    if acl.pattern_type == PatternType.LITERAL:
        return acl.resource_name in (name, WILDCARD)
    if acl.pattern_type == PatternType.PREFIXED:
        return name.startswith(acl.resource_name)
    return False


def _operation_matches(acl: AclBinding, operation: int) -> bool:
    if acl.operation in (operation, AclOperation.ALL):
        return True
    return acl.permission_type == AclPermissionType.ALLOW and acl.operation in _IMPLIES.get(
        operation, ()
    )


class Authorizer:
    """Answers whether a principal may do an operation on a resource, from a set of ACLs."""

    def __init__(self, super_users: Iterable[str]) -> None:
        self.super_users = frozenset(super_users)

    def authorize(
        self,
        acls: Mapping[UUID, AclBinding],
        principal: str,
        host: str,
        operation: int,
        resource_type: int,
        name: str,
    ) -> bool:
        """Whether the ACLs allow `operation` on the resource for `principal` from `host`."""
        if principal in self.super_users:
            return True
        allowed = False
        for acl in acls.values():
            if (
                acl.resource_type != resource_type
                or acl.principal not in (principal, WILDCARD_PRINCIPAL)
                or acl.host not in (host, WILDCARD)
                or not _pattern_matches(acl, name)
                or not _operation_matches(acl, operation)
            ):
                continue
            if acl.permission_type == AclPermissionType.DENY:
                return False
            allowed = allowed or acl.permission_type == AclPermissionType.ALLOW
        return allowed

    def authorized_operations(
        self,
        acls: Mapping[UUID, AclBinding],
        principal: str,
        host: str,
        resource_type: int,
        name: str,
    ) -> int:
        """The `*_authorized_operations` bit field: bit N set when operation N is allowed."""
        bits = 0
        for operation in RESOURCE_OPERATIONS.get(resource_type, ()):
            if self.authorize(acls, principal, host, operation, resource_type, name):
                bits |= 1 << operation
        return bits

    def any_allowed(
        self,
        acls: Mapping[UUID, AclBinding],
        principal: str,
        host: str,
        operation: int,
        resource_type: int,
    ) -> bool:
        """Whether some resource of the type may allow the operation (authorizeByResourceType:
        an ALLOW of any pattern that no DENY of the same reach cancels)."""
        if principal in self.super_users:
            return True
        for acl in acls.values():
            if (
                acl.resource_type == resource_type
                and acl.permission_type == AclPermissionType.ALLOW
                and acl.principal in (principal, WILDCARD_PRINCIPAL)
                and acl.host in (host, WILDCARD)
                and _operation_matches(acl, operation)
                and self.authorize(
                    acls, principal, host, operation, resource_type, acl.resource_name
                )
            ):
                return True
        return False
