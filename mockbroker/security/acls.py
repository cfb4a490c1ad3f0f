"""ACL bindings and binding filters as Kafka's admin APIs use them (sans-I/O): checking a new
binding (CreateAcls), matching bindings against a filter (DescribeAcls, DeleteAcls), and the
names the cluster's test API takes (`"TOPIC"`, `"PREFIXED"`, `"READ"` ...)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from kipwire.codec import AclOperation, AclPermissionType, AclResourceType, PatternType

from .authorizer import CLUSTER_NAME, WILDCARD
from .image import AclBinding


class InvalidAcl(ValueError):
    """A binding CreateAcls refuses (INVALID_REQUEST with this message)."""


def check_binding(binding: AclBinding) -> None:
    """Refuse what Kafka's controller refuses in a new ACL."""
    if binding.resource_type in (AclResourceType.UNKNOWN, AclResourceType.ANY):
        raise InvalidAcl(f"Invalid resourceType {_name(AclResourceType, binding.resource_type)}")
    if binding.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidAcl(f"Invalid patternType {_name(PatternType, binding.pattern_type)}")
    if binding.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise InvalidAcl(f"Invalid operation {_name(AclOperation, binding.operation)}")
    if binding.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        permission = _name(AclPermissionType, binding.permission_type)
        raise InvalidAcl(f"Invalid permissionType {permission}")
    if not binding.resource_name:
        raise InvalidAcl("Resource name should not be empty")
    kind, _, name = binding.principal.partition(":")
    if not kind or not name:
        raise InvalidAcl(
            f"Could not parse principal from `{binding.principal}` (no colon is found)"
        )
    if not binding.host:
        raise InvalidAcl("Invalid null host")
    if binding.resource_type == AclResourceType.CLUSTER and binding.resource_name != CLUSTER_NAME:
        raise InvalidAcl(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")


def _name(enum: Any, value: int) -> str:
    try:
        return enum(value).name
    except ValueError:
        return str(value)


def binding_from_creation(c: Mapping[str, Any]) -> AclBinding:
    """The binding a CreateAcls creation asks for."""
    return AclBinding(
        c["resource_type"],
        c["resource_name"],
        c.get("resource_pattern_type", PatternType.LITERAL),
        c["principal"],
        c["host"],
        c["operation"],
        c["permission_type"],
    )


def filter_matches(f: Mapping[str, Any], acl: AclBinding) -> bool:
    """Whether a DescribeAcls/DeleteAcls filter matches a binding (Kafka's AclBindingFilter)."""
    if f["resource_type_filter"] not in (AclResourceType.ANY, acl.resource_type):
        return False
    if not _pattern_matches(f.get("pattern_type_filter", PatternType.LITERAL), f, acl):
        return False
    principal, host = f.get("principal_filter"), f.get("host_filter")
    return (
        principal in (None, acl.principal)
        and host in (None, acl.host)
        and f["operation"] in (AclOperation.ANY, acl.operation)
        and f["permission_type"] in (AclPermissionType.ANY, acl.permission_type)
    )


def _pattern_matches(kind: int, f: Mapping[str, Any], acl: AclBinding) -> bool:
    name = f.get("resource_name_filter")
    if kind == PatternType.ANY:
        return name is None or name == acl.resource_name
    if kind == PatternType.MATCH:
        if name is None:
            return True
        if acl.pattern_type == PatternType.LITERAL:
            return acl.resource_name in (name, WILDCARD)
        return acl.pattern_type == PatternType.PREFIXED and name.startswith(acl.resource_name)
    return kind == acl.pattern_type and name in (None, acl.resource_name)


def filter_of(binding: AclBinding) -> dict[str, Any]:
    """The filter that matches exactly one binding (what `remove_acl` deletes)."""
    return {
        "resource_type_filter": binding.resource_type,
        "resource_name_filter": binding.resource_name,
        "pattern_type_filter": binding.pattern_type,
        "principal_filter": binding.principal,
        "host_filter": binding.host,
        "operation": binding.operation,
        "permission_type": binding.permission_type,
    }


def binding_from_names(
    principal: str,
    resource_type: str,
    resource_name: str,
    operation: str,
    pattern: str = "LITERAL",
    permission: str = "ALLOW",
    host: str = "*",
) -> AclBinding:
    """A binding from the names the cluster's test API takes; ValueError names a bad one."""

    def pick(enum: Any, value: str, what: str) -> int:
        try:
            return enum[value.upper()]
        except KeyError:
            raise ValueError(f"unknown {what} {value!r}") from None

    return AclBinding(
        pick(AclResourceType, resource_type, "resource type"),
        resource_name,
        pick(PatternType, pattern, "pattern type"),
        principal if ":" in principal else f"User:{principal}",
        host,
        pick(AclOperation, operation, "operation"),
        pick(AclPermissionType, permission, "permission"),
    )


class Acl(NamedTuple):
    """An ACL as the cluster's `acls()` lists it, by name."""

    principal: str
    resource_type: str
    resource_name: str
    operation: str
    pattern: str
    permission: str
    host: str

    @classmethod
    def of(cls, binding: AclBinding) -> Acl:
        """The named form of a binding."""
        return cls(
            binding.principal,
            AclResourceType(binding.resource_type).name,
            binding.resource_name,
            AclOperation(binding.operation).name,
            PatternType(binding.pattern_type).name,
            AclPermissionType(binding.permission_type).name,
            binding.host,
        )
