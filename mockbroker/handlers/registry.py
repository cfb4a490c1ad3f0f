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
    """How the broker serves one API: its versions, its handler and its error response.

    `advertised_min` is what ApiVersions lists; it is below `min_version` only where Kafka 4.1
    itself lists versions it refuses (Produce v0-v2).
    """

    api_key: int
    min_version: int
    max_version: int
    handle: Handle
    fail: Fail
    advertised_min: int


HANDLERS: dict[int, Handler] = {}

#: Kafka 4.1.2's broker listener as ApiVersions v4 answers it (api key: (min, max)); the
#: recorded tests/realkafka/data/api_versions_kafka_4_1.json, which a test keeps equal to this.
KAFKA_4_1_BROKER_VERSIONS: dict[int, tuple[int, int]] = {
    0: (0, 13), 1: (4, 18), 2: (1, 10), 3: (0, 13), 8: (2, 9), 9: (1, 9), 10: (0, 6), 11: (0, 9),
    12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1), 18: (0, 4), 19: (2, 7),
    20: (1, 6), 21: (0, 2), 22: (0, 5), 23: (2, 4), 24: (0, 5), 25: (0, 4), 26: (0, 5), 27: (1, 1),
    28: (0, 5), 29: (1, 3), 30: (1, 3), 31: (1, 3), 32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 4),
    36: (0, 2), 37: (0, 3), 38: (1, 3), 39: (1, 2), 40: (1, 2), 41: (1, 3), 42: (0, 2), 43: (0, 2),
    44: (0, 1), 45: (0, 1), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0),
    55: (0, 2), 57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 2), 68: (0, 1),
    69: (0, 1), 74: (0, 1), 75: (0, 0), 76: (1, 1), 77: (1, 1), 78: (1, 1), 79: (1, 1), 80: (0, 0),
    81: (0, 0), 83: (0, 0), 84: (0, 0), 85: (0, 0), 86: (0, 0), 87: (0, 0), 90: (0, 0), 91: (0, 0),
    92: (0, 0),
}  # fmt: skip

#: Kafka's stable versions the codec knows, from the codec's index.
_CODEC_BROKER_VERSIONS = {
    a["api_key"]: (a["min_version"], a["max_version"]) for a in api_versions("broker")
}


def advertised_versions(api_key: int) -> tuple[int, int]:
    """What a broker lists for an API key: Kafka 4.1's range within the codec's stable one."""
    low, high = _CODEC_BROKER_VERSIONS.get(api_key) or MESSAGES[APIS[api_key][1]][3]
    kafka = KAFKA_4_1_BROKER_VERSIONS.get(api_key)
    if kafka is None:
        return low, high
    return max(low, kafka[0]), min(high, kafka[1])


def top_level_error(body: Body, code: int, version: int) -> dict:
    """An error response for APIs whose response carries one top-level error code."""
    return {"error_code": code}


def handles(
    api_key: int, *, min_version: int | None = None, fail: Fail = top_level_error
) -> Callable[[Handle], Handle]:
    """Register the decorated coroutine as the handler of `api_key`; `min_version` raises the
    lowest version served above the lowest advertised (a version Kafka lists but refuses)."""
    low, high = advertised_versions(api_key)
    served_low = low if min_version is None else max(low, min_version)

    def register(handle: Handle) -> Handle:
        HANDLERS[api_key] = Handler(api_key, served_low, high, handle, fail, low)
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
