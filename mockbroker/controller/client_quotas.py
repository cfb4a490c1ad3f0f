"""AlterClientQuotas (49) on the controller: each entry checked as Kafka's
ClientQuotaControlManager checks it (entity types and their combination, known keys, values
above 0, integral byte rates), then written as ClientQuotaRecords (quota_image.py replays them).
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Mapping
from typing import Any

from kipwire.codec import ErrorCode

from .draft import Draft
from .quota_image import CLIENT_ID, IP, USER, Entity, QuotaError, entity_data
from .result import ControllerResult, ControllerView

_LONG, _INT = ("a LONG", 2**63 - 1), ("an INT", 2**31 - 1)
# The keys each kind of entity takes, with the integral type a value must fit (Kafka's
# QuotaConfig: LONG and INT keys), None for a DOUBLE key.
_CLIENT_KEYS = {
    "producer_byte_rate": _LONG,
    "consumer_byte_rate": _LONG,
    "request_percentage": None,
    "controller_mutation_rate": None,
}
_IP_KEYS = {"connection_creation_rate": _INT}


def _keys_for(pairs: Any) -> tuple[Entity, dict[str, tuple[str, int] | None]]:
    """The entity and the keys it takes; QuotaError for an entity Kafka refuses."""
    seen: dict[str, str | None] = {}
    for e in pairs:
        kind = e["entity_type"]
        if kind not in (USER, CLIENT_ID, IP):
            raise QuotaError(
                ErrorCode.INVALID_REQUEST, f"Unhandled client quota entity type: {kind}"
            )
        if kind in seen:
            raise QuotaError(
                ErrorCode.INVALID_REQUEST,
                f"Invalid client quota entity, duplicate entity entry {kind}",
            )
        if e["entity_name"] == "":
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"Empty {kind} not supported")
        seen[kind] = e["entity_name"]
    if not seen:
        raise QuotaError(ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity")
    entity = tuple(sorted(seen.items()))
    if IP in seen:
        if len(seen) > 1:
            raise QuotaError(
                ErrorCode.INVALID_REQUEST,
                # Kafka's message, its missing space kept
                "Invalid quota entity combination, IP entity shouldnot be combined with "
                "User or ClientId",
            )
        name = seen[IP]
        if name is not None:
            try:
                ipaddress.ip_address(name)
            except ValueError:
                raise QuotaError(
                    ErrorCode.INVALID_REQUEST, f"{name} is not a valid IP or resolvable host."
                ) from None
        return entity, _IP_KEYS
    return entity, _CLIENT_KEYS


def _check_value(keys: Mapping[str, tuple[str, int] | None], key: str, value: float) -> None:
    if key not in keys:
        raise QuotaError(ErrorCode.INVALID_REQUEST, f"Invalid configuration key {key}")
    if not math.isfinite(value):
        raise QuotaError(ErrorCode.INVALID_REQUEST, f"Quota {key} must be a finite number")
    if value <= 0.0:
        raise QuotaError(ErrorCode.INVALID_REQUEST, f"Quota {key} must be greater than 0")
    integral = keys[key]
    if integral is not None:
        kind, largest = integral
        if value > largest:
            raise QuotaError(
                ErrorCode.INVALID_REQUEST, f"Proposed value for {key} is too large for {kind}."
            )
        if abs(value % 1.0) > 1e-6:
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"{key} cannot be a fractional value.")


def _entry_changes(entry: Any) -> tuple[Entity, dict[str, float | None]]:
    """An entry's entity and its key changes (None removes); QuotaError when Kafka refuses."""
    entity, keys = _keys_for(entry["entity"])
    changes: dict[str, float | None] = {}
    for op in entry["ops"]:
        key = op["key"]
        if op["remove"]:
            if key not in keys:
                raise QuotaError(ErrorCode.INVALID_REQUEST, f"Invalid configuration key {key}")
            changes[key] = None
        else:
            _check_value(keys, key, op["value"])
            changes[key] = op["value"]
    return entity, changes


def alter_client_quotas(view: ControllerView, version: int, body: Any) -> ControllerResult:
    """AlterClientQuotas v0-v1: one answer per entity, each entry checked alone; a valid one
    writes a ClientQuotaRecord per key it changes (unless ValidateOnly). As Kafka's, an entity
    named again (or an entry naming a key twice) is not applied and answers "Ignoring duplicate
    entity" (Kafka lists the answers from a hash map; here they keep the request's order)."""
    draft = Draft(view)
    results: dict[tuple, tuple[list, int, str | None]] = {}
    for entry in body["entries"]:
        named = tuple(sorted((e["entity_type"], e["entity_name"]) for e in entry["entity"]))
        keys = [op["key"] for op in entry["ops"]]
        if named in results or len(set(keys)) != len(keys):
            text = ", ".join(f"{kind}={name}" for kind, name in named)
            message = f"Ignoring duplicate entity ClientQuotaEntity(entries={{{text}}})"
            results[named] = (list(entry["entity"]), ErrorCode.INVALID_REQUEST, message)
            continue
        code, message = ErrorCode.NONE, None
        try:
            entity, changes = _entry_changes(entry)
        except QuotaError as exc:
            code, message = exc.code, str(exc)
        else:
            if not body["validate_only"]:
                _write(draft, entity, changes)
        results[named] = (list(entry["entity"]), code, message)
    entries = [
        {"error_code": code, "error_message": message, "entity": entity}
        for entity, code, message in results.values()
    ]
    return draft.result({"entries": entries})


def _write(draft: Draft, entity: Entity, changes: Mapping[str, float | None]) -> None:
    current = draft.state.quotas.get(entity, {})
    for key, value in changes.items():
        if value is None and key not in current:
            continue
        if value is not None and current.get(key) == value:
            continue
        draft.add(
            "ClientQuotaRecord",
            {
                "entity": entity_data(entity),
                "key": key,
                "value": 0.0 if value is None else value,
                "remove": value is None,
            },
        )
