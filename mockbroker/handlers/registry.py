"""The handler table: one entry per API key, with the versions served and an error builder."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kipwire.codec import APIS, MESSAGES, api_versions

if TYPE_CHECKING:
    from ..broker.node import BrokerNode

Body = Any
Handle = Callable[["RequestContext", Body], Awaitable[dict | None]]
Fail = Callable[[Body, int, int], dict]


@dataclass(slots=True)
class RequestContext:
    """What a handler knows about the request beyond its body."""

    broker: BrokerNode
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


@dataclass(frozen=True, slots=True)
class Handler:
    """How the broker serves one API: its versions, its handler and its error response."""

    api_key: int
    min_version: int
    max_version: int
    handle: Handle
    fail: Fail


HANDLERS: dict[int, Handler] = {}


#: What a Kafka broker listener advertises (stable versions only), from the codec's index.
_BROKER_VERSIONS = {
    a["api_key"]: (a["min_version"], a["max_version"]) for a in api_versions("broker")
}


def advertised_versions(api_key: int) -> tuple[int, int]:
    """The versions a broker serves for an API key: Kafka's stable ones the codec knows."""
    return _BROKER_VERSIONS.get(api_key) or MESSAGES[APIS[api_key][1]][3]


def top_level_error(body: Body, code: int, version: int) -> dict:
    """An error response for APIs whose response carries one top-level error code."""
    return {"error_code": code}


def handles(
    api_key: int, *, min_version: int | None = None, fail: Fail = top_level_error
) -> Callable[[Handle], Handle]:
    """Register the decorated coroutine as the handler of `api_key` (its advertised versions)."""
    low, high = advertised_versions(api_key)

    def register(handle: Handle) -> Handle:
        HANDLERS[api_key] = Handler(
            api_key, low if min_version is None else min_version, high, handle, fail
        )
        return handle

    return register


def per_partition_error(
    topics_key: str, parts_key: str, name_key: str, index_key: str, out_topics: str, out_parts: str
) -> Fail:
    """An error builder mirroring a request's topics and partitions, each with the error code."""

    def fail(body: Body, code: int, version: int) -> dict:
        return {
            out_topics: [
                {
                    name_key: t.get(name_key),
                    **({"topic_id": t["topic_id"]} if "topic_id" in t else {}),
                    out_parts: [
                        {index_key: p if isinstance(p, int) else p[index_key], "error_code": code}
                        for p in t[parts_key]
                    ],
                }
                for t in (body.get(topics_key) or [])
            ]
        }

    return fail
