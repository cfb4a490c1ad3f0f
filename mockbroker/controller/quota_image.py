"""Client quotas as the metadata log leaves them, shared by the controller's state and the
brokers' images: the entity model, ClientQuotaRecord's replay, and DescribeClientQuotas' filter
over the replayed quotas (Kafka's ClientQuotasImage#describe).

An entity is a set of (entity type, name) pairs, None naming the type's default entity: user and
client-id (alone or together) or ip alone. The rule that writes the records is client_quotas.py.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from kipwire.codec import ErrorCode

USER = "user"
CLIENT_ID = "client-id"
IP = "ip"
#: (entity type, name or None for the default), sorted by type.
Entity = tuple[tuple[str, str | None], ...]
#: entity -> quota key -> value.
Quotas = MutableMapping[Entity, dict[str, float]]

# DescribeClientQuotas' match types.
MATCH_EXACT = 0
MATCH_DEFAULT = 1
MATCH_SPECIFIED = 2


class QuotaError(ValueError):
    """A request Kafka refuses: its error code and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def entity_of(pairs: Any) -> Entity:
    """The entity a request's or record's entity list names (type, name) by type."""
    return tuple(sorted((e["entity_type"], e["entity_name"]) for e in pairs))


def entity_data(entity: Entity) -> list[dict]:
    """The entity as a response's or record's entity list."""
    return [{"entity_type": kind, "entity_name": name} for kind, name in entity]


def replay_client_quota(quotas: Quotas, record: Mapping[str, Any]) -> None:
    """Apply one ClientQuotaRecord: set a key's value, or remove it (and an entity left
    without keys, as Kafka's image drops it)."""
    entity = entity_of(record["entity"])
    if record["remove"]:
        values = quotas.get(entity)
        if values is None or record["key"] not in values:
            return
        values = {k: v for k, v in values.items() if k != record["key"]}
        if values:
            quotas[entity] = values
        else:
            del quotas[entity]
    else:
        quotas[entity] = {**quotas.get(entity, {}), record["key"]: record["value"]}


def _filter(components: Any) -> tuple[dict[str, str | None], set[str]]:
    """DescribeClientQuotas' components as exact matches (None: the default) and types that
    must name a specific entity; QuotaError as Kafka's image refuses a filter."""
    exact: dict[str, str | None] = {}
    specified: set[str] = set()
    for c in components:
        kind, match = c["entity_type"], c["match"]
        if not kind:
            raise QuotaError(ErrorCode.INVALID_REQUEST, "Invalid empty entity type.")
        if kind in exact or kind in specified:
            raise QuotaError(
                ErrorCode.INVALID_REQUEST,
                f"Entity type {kind} cannot appear more than once in the filter.",
            )
        if kind not in (IP, USER, CLIENT_ID):
            raise QuotaError(ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {kind}")
        match_type = c["match_type"]
        if match_type == MATCH_EXACT:
            if match is None:
                raise QuotaError(
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_EXACT, but set match string to null.",
                )
            exact[kind] = match
        elif match_type == MATCH_DEFAULT:
            if match is not None:
                raise QuotaError(
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
                )
            exact[kind] = None
        elif match_type == MATCH_SPECIFIED:
            if match is not None:
                raise QuotaError(
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
                )
            specified.add(kind)
        else:
            raise QuotaError(ErrorCode.UNSUPPORTED_VERSION, f"Unknown match type {match_type}")
    kinds = exact.keys() | specified
    if IP in kinds and kinds & {USER, CLIENT_ID}:
        raise QuotaError(
            ErrorCode.INVALID_REQUEST,
            "Invalid entity filter component combination. IP filter component should not be "
            "used with user or clientId filter component.",
        )
    return exact, specified


def _matches(
    entity: Entity, exact: Mapping[str, str | None], specified: set[str], strict: bool
) -> bool:
    names = dict(entity)
    if strict and len(names) != len(exact) + len(specified):
        return False
    if any(kind not in names or names[kind] != name for kind, name in exact.items()):
        return False
    # MATCH_TYPE_SPECIFIED asks only that the entity has the type: its default entity too
    return all(kind in names for kind in specified)


def describe_client_quotas(quotas: Mapping[Entity, Mapping[str, float]], body: Any) -> dict:
    """DescribeClientQuotas v0-v1 over replayed quotas: the entities the filter matches, or
    the filter's error with no entries."""
    try:
        exact, specified = _filter(body["components"])
    except QuotaError as exc:
        return {"error_code": exc.code, "error_message": str(exc), "entries": None}
    entries = [
        {
            "entity": entity_data(entity),
            "values": [{"key": k, "value": v} for k, v in sorted(values.items())],
        }
        for entity, values in sorted(quotas.items(), key=lambda kv: repr(kv[0]))
        if _matches(entity, exact, specified, body["strict"])
    ]
    return {"error_code": ErrorCode.NONE, "error_message": None, "entries": entries}
