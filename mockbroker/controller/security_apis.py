"""The controller's security APIs: CreateAcls and DeleteAcls (AccessControlEntryRecord,
RemoveAccessControlEntryRecord), AlterUserScramCredentials (KIP-554:
UserScramCredentialRecord, RemoveUserScramCredentialRecord) and Create/Renew/Expire
DelegationToken (DelegationTokenRecord, RemoveDelegationTokenRecord). Brokers forward them here
(having checked the requester's rights) and serve the Describe APIs from what they replayed."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from kipwire.codec import ConfigResourceType, ErrorCode

from ..security.acls import InvalidAcl, binding_from_creation, check_binding, filter_matches
from ..security.scram import MECHANISM_TYPES, credential_from_salted
from ..security.tokens import (
    EXPIRY_TIME_MS,
    MAX_LIFETIME_MS,
    TokenInfo,
    find_by_hmac,
    new_token_id,
    split_principal,
    token_hmac,
)
from .draft import Draft
from .result import ControllerResult, ControllerView

#: Kafka's bounds on SCRAM iterations (ScramMechanism.minIterations, maxIterations).
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384
_MECHANISMS = {number: name for name, number in MECHANISM_TYPES.items()}


def create_acls(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """One AccessControlEntryRecord per new binding; an existing binding is left as it is."""
    draft = Draft(view)
    results = []
    for creation in body["creations"]:
        binding = binding_from_creation(creation)
        try:
            check_binding(binding)
        except InvalidAcl as exc:
            results.append({"error_code": ErrorCode.INVALID_REQUEST, "error_message": str(exc)})
            continue
        if binding not in draft.state.acls.values():
            draft.add("AccessControlEntryRecord", binding.record(uuid.uuid4()))
        results.append({"error_code": ErrorCode.NONE, "error_message": None})
    return draft.result({"results": results})


def delete_acls(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """A RemoveAccessControlEntryRecord for every binding a filter matches."""
    draft = Draft(view)
    results = []
    for f in body["filters"]:
        matching = []
        for acl_id, acl in list(draft.state.acls.items()):
            if filter_matches(f, acl):
                draft.add("RemoveAccessControlEntryRecord", {"id": acl_id})
                matching.append(
                    {
                        "error_code": ErrorCode.NONE,
                        "error_message": None,
                        "resource_type": acl.resource_type,
                        "resource_name": acl.resource_name,
                        "pattern_type": acl.pattern_type,
                        "principal": acl.principal,
                        "host": acl.host,
                        "operation": acl.operation,
                        "permission_type": acl.permission_type,
                    }
                )
        results.append(
            {"error_code": ErrorCode.NONE, "error_message": None, "matching_acls": matching}
        )
    return draft.result({"filter_results": results})


def alter_user_scram_credentials(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """Upsert and delete SCRAM credentials; one result per user, all of a user's changes or
    none (a salted password arrives, never the password)."""
    draft = Draft(view)
    changes: dict[str, list[tuple[str, Any]]] = {}
    for deletion in body["deletions"]:
        changes.setdefault(deletion["name"], []).append(("delete", deletion))
    for upsertion in body["upsertions"]:
        changes.setdefault(upsertion["name"], []).append(("upsert", upsertion))
    results = []
    for user, asked in changes.items():
        code, message = _check_user_changes(draft, user, asked)
        if code == ErrorCode.NONE:
            for kind, change in asked:
                if kind == "delete":
                    draft.add(
                        "RemoveUserScramCredentialRecord",
                        {"name": user, "mechanism": change["mechanism"]},
                    )
                else:
                    c = credential_from_salted(
                        _MECHANISMS[change["mechanism"]],
                        bytes(change["salted_password"]),
                        bytes(change["salt"]),
                        change["iterations"],
                    )
                    draft.add(
                        "UserScramCredentialRecord",
                        {
                            "name": user,
                            "mechanism": change["mechanism"],
                            "salt": c.salt,
                            "stored_key": c.stored_key,
                            "server_key": c.server_key,
                            "iterations": c.iterations,
                        },
                    )
        results.append({"user": user, "error_code": code, "error_message": message})
    return draft.result({"results": results})


def _check_user_changes(draft: Draft, user: str, asked: list) -> tuple[int, str | None]:
    if not user:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    mechanisms = [change["mechanism"] for _, change in asked]
    if len(set(mechanisms)) != len(mechanisms):
        return (
            ErrorCode.DUPLICATE_RESOURCE,
            "A user credential cannot be altered twice in the same request",
        )
    for kind, change in asked:
        if change["mechanism"] not in _MECHANISMS:
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
        if kind == "delete" and (user, change["mechanism"]) not in draft.state.scram:
            return (
                ErrorCode.RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist",
            )
        if kind == "upsert":
            if change["iterations"] < MIN_ITERATIONS:
                return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
            if change["iterations"] > MAX_ITERATIONS:
                return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    return ErrorCode.NONE, None


def _setting(view: ControllerView, name: str, default: int) -> int:
    value = view.state.config(ConfigResourceType.BROKER, "", name)
    return default if value is None else int(value)


def create_delegation_token(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """A DelegationTokenRecord for the owner the forwarding broker names (it checked the
    requester); its HMAC in the response."""
    secret = view.settings.delegation_token_secret
    owner = f"{body.get('owner_principal_type') or 'User'}:{body.get('owner_principal_name')}"
    if secret is None:
        return ControllerResult(response={"error_code": ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED})
    now = view.now_ms + view.settings.wall_clock_offset_ms
    lifetime = _setting(view, "delegation.token.max.lifetime.ms", MAX_LIFETIME_MS)
    if body["max_lifetime_ms"] > 0:
        lifetime = min(lifetime, body["max_lifetime_ms"])
    expiry_time = _setting(view, "delegation.token.expiry.time.ms", EXPIRY_TIME_MS)
    renewers = tuple(f"{r['principal_type']}:{r['principal_name']}" for r in body["renewers"])
    token = TokenInfo(
        new_token_id(),
        owner,
        owner,
        renewers,
        now,
        now + lifetime,
        min(now + expiry_time, now + lifetime),
    )
    draft = Draft(view)
    draft.add("DelegationTokenRecord", token.record())
    kind, name = split_principal(owner)
    return draft.result(
        {
            "error_code": ErrorCode.NONE,
            "principal_type": kind,
            "principal_name": name,
            "token_requester_principal_type": kind,
            "token_requester_principal_name": name,
            "issue_timestamp_ms": token.issue_ms,
            "expiry_timestamp_ms": token.expiry_ms,
            "max_timestamp_ms": token.max_ms,
            "token_id": token.token_id,
            "hmac": token_hmac(secret, token.token_id),
        }
    )


def renew_delegation_token(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """A later expiry (never past the token's maximum) for the token of an HMAC."""
    return _change_expiry(view, body["hmac"], body["renew_period_ms"], removes=False)


def expire_delegation_token(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """An earlier expiry; a negative period removes the token now."""
    return _change_expiry(view, body["hmac"], body["expiry_time_period_ms"], removes=True)


def _change_expiry(
    view: ControllerView, mac: bytes, period: int, removes: bool
) -> ControllerResult:
    secret = view.settings.delegation_token_secret
    if secret is None:
        return ControllerResult(response={"error_code": ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED})
    token = find_by_hmac(secret, view.state.tokens, bytes(mac))
    if token is None:
        return ControllerResult(response={"error_code": ErrorCode.DELEGATION_TOKEN_NOT_FOUND})
    now = view.now_ms + view.settings.wall_clock_offset_ms
    draft = Draft(view)
    if removes and period < 0:
        draft.add("RemoveDelegationTokenRecord", {"token_id": token.token_id})
        return draft.result({"error_code": ErrorCode.NONE, "expiry_timestamp_ms": now})
    if token.expiry_ms < now:
        return ControllerResult(response={"error_code": ErrorCode.DELEGATION_TOKEN_EXPIRED})
    if period < 0:
        period = _setting(view, "delegation.token.expiry.time.ms", EXPIRY_TIME_MS)
    renewed = replace(token, expiry_ms=min(token.max_ms, now + period))
    draft.add("DelegationTokenRecord", renewed.record())
    return draft.result({"error_code": ErrorCode.NONE, "expiry_timestamp_ms": renewed.expiry_ms})
