"""StandardAuthorizer's rules over a set of ACLs, without a cluster."""

from __future__ import annotations

import uuid

import pytest

from kipwire.codec import AclOperation as Op
from kipwire.codec import AclPermissionType, PatternType
from kipwire.codec import AclResourceType as Res
from kipwire.mockbroker.security.acls import Acl, binding_from_names, filter_matches
from kipwire.mockbroker.security.authorizer import CLUSTER_NAME, Authorizer

ALICE = "User:alice"


def _acls(*specs: tuple) -> dict:
    return {
        uuid.uuid4(): binding_from_names(*spec[:4], **spec[4] if len(spec) > 4 else {})
        for spec in specs
    }


def _may(
    acls: dict,
    operation: int,
    resource: int,
    name: str,
    *,
    principal: str = ALICE,
    host: str = "10.0.0.1",
    supers: tuple = (),
) -> bool:
    return Authorizer(supers).authorize(acls, principal, host, operation, resource, name)


def test_no_acl_denies_and_super_users_are_always_allowed():
    assert not _may({}, Op.READ, Res.TOPIC, "orders")
    assert _may({}, Op.READ, Res.TOPIC, "orders", supers=(ALICE,))


def test_literal_prefixed_and_wildcard_patterns():
    acls = _acls(
        (ALICE, "TOPIC", "orders", "READ"),
        (ALICE, "TOPIC", "svc-", "WRITE", {"pattern": "PREFIXED"}),
        (ALICE, "GROUP", "*", "READ"),
    )
    assert _may(acls, Op.READ, Res.TOPIC, "orders")
    assert not _may(acls, Op.READ, Res.TOPIC, "orders-2")
    assert _may(acls, Op.WRITE, Res.TOPIC, "svc-a") and not _may(acls, Op.WRITE, Res.TOPIC, "sv")
    assert _may(acls, Op.READ, Res.GROUP, "anything")
    assert not _may(acls, Op.READ, Res.TOPIC, "svc-a")  # WRITE does not give READ


def test_deny_wins_over_allow():
    acls = _acls(
        (ALICE, "TOPIC", "*", "ALL"),
        (ALICE, "TOPIC", "secret-", "ALL", {"pattern": "PREFIXED", "permission": "DENY"}),
    )
    assert _may(acls, Op.WRITE, Res.TOPIC, "public")
    assert not _may(acls, Op.WRITE, Res.TOPIC, "secret-plans")
    assert not _may(acls, Op.DESCRIBE, Res.TOPIC, "secret-plans")


def test_implied_operations():
    acls = _acls((ALICE, "TOPIC", "t", "WRITE"), (ALICE, "TOPIC", "c", "ALTER_CONFIGS"))
    assert _may(acls, Op.DESCRIBE, Res.TOPIC, "t")
    assert _may(acls, Op.DESCRIBE_CONFIGS, Res.TOPIC, "c")
    assert not _may(acls, Op.DESCRIBE, Res.TOPIC, "c")
    # a DENY of WRITE does not deny DESCRIBE
    denied = _acls(
        (ALICE, "TOPIC", "t", "DESCRIBE"), (ALICE, "TOPIC", "t", "WRITE", {"permission": "DENY"})
    )
    assert _may(denied, Op.DESCRIBE, Res.TOPIC, "t")


def test_principal_wildcard_and_hosts():
    acls = _acls(
        ("User:*", "TOPIC", "shared", "READ"),
        (ALICE, "TOPIC", "local", "READ", {"host": "10.0.0.1"}),
    )
    assert _may(acls, Op.READ, Res.TOPIC, "shared", principal="User:bob")
    assert _may(acls, Op.READ, Res.TOPIC, "local")
    assert not _may(acls, Op.READ, Res.TOPIC, "local", host="10.0.0.2")


def test_authorized_operations_bits():
    acls = _acls(
        (ALICE, "TOPIC", "t", "READ"), (ALICE, "CLUSTER", CLUSTER_NAME, "IDEMPOTENT_WRITE")
    )
    bits = Authorizer(()).authorized_operations(acls, ALICE, "h", Res.TOPIC, "t")
    assert bits == (1 << Op.READ) | (1 << Op.DESCRIBE)
    cluster = Authorizer(()).authorized_operations(acls, ALICE, "h", Res.CLUSTER, CLUSTER_NAME)
    assert cluster == 1 << Op.IDEMPOTENT_WRITE


def test_any_allowed_by_resource_type():
    acls = _acls((ALICE, "TOPIC", "t-", "WRITE", {"pattern": "PREFIXED"}))
    authorizer = Authorizer(())
    assert authorizer.any_allowed(acls, ALICE, "h", Op.WRITE, Res.TOPIC)
    assert not authorizer.any_allowed(acls, "User:bob", "h", Op.WRITE, Res.TOPIC)


def test_filters_match_as_kafkas_binding_filters():
    prefixed = binding_from_names(ALICE, "TOPIC", "svc-", "READ", pattern="PREFIXED")
    base = {
        "resource_type_filter": Res.ANY,
        "resource_name_filter": None,
        "principal_filter": None,
        "host_filter": None,
        "operation": Op.ANY,
        "permission_type": AclPermissionType.ANY,
    }
    assert filter_matches({**base, "pattern_type_filter": PatternType.ANY}, prefixed)
    match = {**base, "pattern_type_filter": PatternType.MATCH, "resource_name_filter": "svc-a"}
    assert filter_matches(match, prefixed)
    assert not filter_matches({**base, "pattern_type_filter": PatternType.LITERAL}, prefixed)
    other = {**base, "pattern_type_filter": PatternType.ANY, "principal_filter": "User:bob"}
    assert not filter_matches(other, prefixed)
    assert Acl.of(prefixed) == Acl(ALICE, "TOPIC", "svc-", "READ", "PREFIXED", "ALLOW", "*")


def test_unknown_names_are_refused():
    with pytest.raises(ValueError, match="unknown operation 'FLY'"):
        binding_from_names(ALICE, "TOPIC", "t", "FLY")
