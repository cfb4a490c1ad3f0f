"""The control API's endpoints: a method and a path in, a status and a JSON body out.

Each endpoint is one call to the `Cluster` method the Python API uses (`stop_broker`,
`partition_network`, `inject_error`, ...), so the two cannot drift apart; this module only
checks the JSON, names the fault handles with ids, and maps the cluster's errors to statuses:
400 for a bad body, 404 for an unknown broker, node, topic, partition or fault (UnknownResource),
409 for a broker already stopped or running (WrongState) or a topic that exists.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from kipwire.codec import ApiKey, ErrorCode

from ..errors import ClusterError, UnknownResource, WrongState
from ..faults import CutInjection, ErrorInjection, FaultHandle, LatencyInjection
from ..metrics import settled
from ..network import CONTROLLER, NodeId


@dataclass(frozen=True, slots=True)
class Reply:
    """A status and the JSON body that goes with it."""

    status: int
    body: Any


class HttpError(Exception):
    """An answer other than success: its status and message (sent as {"error": message})."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


Endpoint = Callable[[dict[str, str], dict[str, Any]], Awaitable[Reply]]


def _ok(body: Any, status: int = 200) -> Reply:
    return Reply(status, body)


class ControlAPI:
    """The endpoints over one cluster, and the faults they injected, by id."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.faults: dict[int, FaultHandle] = {}
        self._ids = itertools.count(1)
        routes: list[tuple[str, str, Endpoint]] = [
            ("GET", "/v1/cluster", self.get_cluster),
            ("GET", "/v1/topics", self.list_topics),
            ("POST", "/v1/topics", self.create_topic),
            ("GET", "/v1/topics/{topic}/partitions/{partition}", self.get_partition),
            ("POST", "/v1/brokers/{broker}/stop", self.stop_broker),
            ("POST", "/v1/brokers/{broker}/start", self.start_broker),
            ("POST", "/v1/network/partition", self.partition_network),
            ("POST", "/v1/network/cut", self.cut),
            ("POST", "/v1/network/isolate", self.isolate),
            ("POST", "/v1/network/heal", self.heal),
            ("GET", "/v1/network/{id}", self.get_cut),
            ("DELETE", "/v1/network/{id}", self.remove_cut),
            ("GET", "/v1/faults", self.list_faults),
            ("POST", "/v1/faults/errors", self.inject_error),
            ("GET", "/v1/faults/errors/{id}", self.get_error),
            ("DELETE", "/v1/faults/errors/{id}", self.remove_error),
            ("POST", "/v1/faults/latency", self.add_latency),
            ("GET", "/v1/faults/latency/{id}", self.get_latency),
            ("DELETE", "/v1/faults/latency/{id}", self.remove_latency),
            ("GET", "/v1/metrics", self.metrics),
        ]
        self._routes = [(method, _pattern(path), fn) for method, path, fn in routes]

    async def answer(self, method: str, target: str, body: bytes) -> Reply:
        """The reply to one request; never raises for a client's mistake."""
        path = urlsplit(target).path
        allowed = []
        for route_method, pattern, endpoint in self._routes:
            match = pattern.fullmatch(path)
            if match is None:
                continue
            if route_method != method:
                allowed.append(route_method)
                continue
            params = {k: unquote(v) for k, v in match.groupdict().items()}
            try:
                return await endpoint(params, _json_object(body))
            except HttpError as exc:
                return Reply(exc.status, {"error": str(exc)})
            except UnknownResource as exc:
                return Reply(404, {"error": str(exc)})
            except WrongState as exc:
                return Reply(409, {"error": str(exc)})
            except ClusterError as exc:
                status = 409 if exc.error_code == ErrorCode.TOPIC_ALREADY_EXISTS else 400
                return Reply(status, {"error": str(exc)})
            except (ValueError, TypeError) as exc:
                return Reply(400, {"error": str(exc)})
        if allowed:
            return Reply(405, {"error": f"{path} takes {', '.join(sorted(set(allowed)))}"})
        return Reply(404, {"error": f"no endpoint {path}"})

    # -- the cluster --------------------------------------------------------------------------

    async def get_cluster(self, params: dict[str, str], body: dict[str, Any]) -> Reply:
        """GET /v1/cluster: brokers (id, host, port, state) and the controller (id, port)."""
        return _ok(self.cluster.describe())

    async def metrics(self, params: dict[str, str], body: dict[str, Any]) -> Reply:
        """GET /v1/metrics: what --metrics-port serves, as JSON."""
        return _ok(await settled(self.cluster.metrics()))

    async def list_topics(self, params: dict[str, str], body: dict[str, Any]) -> Reply:
        """GET /v1/topics: every topic with its id and partition count."""
        topics = sorted(self.cluster.controller.state.topics.values(), key=lambda t: t.name)
        return _ok(
            {
                "topics": [
                    {"name": t.name, "topic_id": str(t.topic_id), "partitions": len(t.partitions)}
                    for t in topics
                ]
            }
        )

    async def create_topic(self, params: dict[str, str], body: dict[str, Any]) -> Reply:
        """POST /v1/topics {"name", "partitions", "replication_factor", "configs"}: 201."""
        name = _field(body, "name", str)
        partitions = _field(body, "partitions", int, -1)
        replication = _field(body, "replication_factor", int, -1)
        configs = _field(body, "configs", dict, {})
        await self.cluster.create_topic(name, partitions, replication, configs)
        count = len(self.cluster.controller.state.topic(name).partitions)
        return _ok({"name": name, "partitions": count}, 201)

    async def get_partition(self, params: dict[str, str], body: dict[str, Any]) -> Reply:
        """GET /v1/topics/{topic}/partitions/{p}: leader, epoch, ISR, ELR, HWM."""
        index = _number(params["partition"], "partition")
        return _ok(await settled(self.cluster.describe_partition(params["topic"], index)))

    async def stop_broker(self, params: dict[str, str], body: dict[str, Any]) -> Reply:
        """POST /v1/brokers/{id}/stop {"clean"}: returns once the controller has fenced it."""
        broker = _number(params["broker"], "broker id")
        clean = _field(body, "clean", bool, True)
        await self.cluster.stop_broker(broker, clean)
        return _ok(self._broker(broker))

    async def start_broker(self, params: dict[str, str], body: dict[str, Any]) -> Reply:
        """POST /v1/brokers/{id}/start: returns once it has registered and caught up."""
        broker = _number(params["broker"], "broker id")
        await self.cluster.start_broker(broker)
        return _ok(self._broker(broker))

    def _broker(self, broker_id: int) -> dict[str, Any]:
        return next(b for b in self.cluster.describe()["brokers"] if b["id"] == broker_id)

    # -- the network --------------------------------------------------------------------------

    async def partition_network(self, params: dict[str, str], body: dict[str, Any]) -> Reply:
        """POST /v1/network/partition {"groups": [[1], [2, 3]]}: cuts between the groups."""
        groups = _field(body, "groups", list)
        if not all(isinstance(g, list) for g in groups):
            raise HttpError(400, '"groups" is a list of lists of nodes')
        handle = await settled(
            self.cluster.partition_network(*[[_node(n) for n in g] for g in groups])
        )
        return self._register(handle)

    async def cut(self, params: dict[str, str], body: dict[str, Any]) -> Reply:
        """POST /v1/network/cut {"a", "b"}: the link between two nodes, both ways."""
        a, b = _node(_field(body, "a", object)), _node(_field(body, "b", object))
        return self._register(await settled(self.cluster.partition_network(a, b)))

    async def isolate(self, params: dict[str, str], body: dict[str, Any]) -> Reply:
        """POST /v1/network/isolate {"node"}: cut a node off from every other node."""
        node = _node(_field(body, "node", object))
        return self._register(await settled(self.cluster.isolate(node)))

    async def heal(self, params: dict[str, str], body: dict[str, Any]) -> Reply:
        """POST /v1/network/heal: end every cut and isolation."""
        await settled(self.cluster.heal())
        return _ok({})

    async def get_cut(self, params: dict[str, str], body: dict[str, Any]) -> Reply:
        """GET /v1/network/{id}: a cut's state."""
        return _ok(_describe(params["id"], self._fault(params["id"], CutInjection)))

    async def remove_cut(self, params: dict[str, str], body: dict[str, Any]) -> Reply:
        """DELETE /v1/network/{id}: end one cut."""
        self._fault(params["id"], CutInjection).remove()
        await self.cluster.faults_reached()
        return _ok({})

    # -- faults -------------------------------------------------------------------------------

    async def list_faults(self, params: dict[str, str], body: dict[str, Any]) -> Reply:
        """GET /v1/faults: every fault this API injected, by id."""
        return _ok({"faults": [_describe(str(i), h) for i, h in sorted(self.faults.items())]})

    async def inject_error(self, params: dict[str, str], body: dict[str, Any]) -> Reply:
        """POST /v1/faults/errors {"api_key", "error_code", "count", "broker", "partition"}."""
        api_key = _enum(ApiKey, _field(body, "api_key", object), "api_key")
        error_code = _enum(ErrorCode, _field(body, "error_code", object), "error_code")
        count = _field(body, "count", int, 1)
        broker = _field(body, "broker", int, None)
        where = _field(body, "partition", dict, None)
        partition = None
        if where is not None:
            partition = (_field(where, "topic", str), _field(where, "partition", int))
        if broker is not None:
            self.cluster.node(broker)  # 404 for an unknown broker
        handle = await settled(
            self.cluster.inject_error(api_key, error_code, count, broker, None, partition)
        )
        return self._register(handle)

    async def get_error(self, params: dict[str, str], body: dict[str, Any]) -> Reply:
        """GET /v1/faults/errors/{id}: {"fired", "remaining", ...}."""
        return _ok(_describe(params["id"], self._fault(params["id"], ErrorInjection)))

    async def remove_error(self, params: dict[str, str], body: dict[str, Any]) -> Reply:
        """DELETE /v1/faults/errors/{id}: end the injection."""
        self._fault(params["id"], ErrorInjection).remove()
        await self.cluster.faults_reached()
        return _ok({})

    async def add_latency(self, params: dict[str, str], body: dict[str, Any]) -> Reply:
        """POST /v1/faults/latency {"ms", "broker"}: latency on a broker's answers, or all."""
        ms = _field(body, "ms", float)
        broker = _field(body, "broker", int, None)
        return self._register(await settled(self.cluster.add_latency(ms, broker)))

    async def get_latency(self, params: dict[str, str], body: dict[str, Any]) -> Reply:
        """GET /v1/faults/latency/{id}: {"fired", ...}."""
        return _ok(_describe(params["id"], self._fault(params["id"], LatencyInjection)))

    async def remove_latency(self, params: dict[str, str], body: dict[str, Any]) -> Reply:
        """DELETE /v1/faults/latency/{id}: end the latency."""
        self._fault(params["id"], LatencyInjection).remove()
        await self.cluster.faults_reached()
        return _ok({})

    def _register(self, handle: FaultHandle) -> Reply:
        fault_id = next(self._ids)
        self.faults[fault_id] = handle
        return _ok({"id": fault_id})

    def _fault(self, text: str, kind: type[FaultHandle]) -> FaultHandle:
        handle = self.faults.get(_number(text, "fault id"))
        if not isinstance(handle, kind):
            raise UnknownResource(f"no {kind.__name__} with id {text}")
        return handle


def _describe(fault_id: str, handle: FaultHandle) -> dict[str, Any]:
    out: dict[str, Any] = {"id": int(fault_id), "kind": handle.kind, "fired": handle.fired}
    out["active"] = handle.active
    if isinstance(handle, ErrorInjection):
        out["remaining"] = handle.remaining if handle.active else 0
        out["api_key"], out["error_code"] = ApiKey(handle.api_key).name, handle.error_code
    return out


def _pattern(path: str) -> re.Pattern[str]:
    return re.compile(re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", path))


def _json_object(body: bytes) -> dict[str, Any]:
    if not body.strip():
        return {}
    try:
        value = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HttpError(400, f"the body is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise HttpError(400, "the body is a JSON object")
    return value


_MISSING = object()


def _field(body: dict[str, Any], name: str, kind: type, default: Any = _MISSING) -> Any:
    """A body field of the given JSON type (int is not bool; a float field takes ints)."""
    if name not in body or (body[name] is None and default is None):
        if default is _MISSING:
            raise HttpError(400, f'"{name}" is required')
        return default
    value = body[name]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise HttpError(400, f'"{name}" must be a JSON {kind.__name__}, got {value!r}')
    return value


def _number(text: str, what: str) -> int:
    if not text.lstrip("-").isdigit():
        raise HttpError(400, f"{what} {text!r} is not a number")
    return int(text)


def _node(value: object) -> NodeId:
    if value == CONTROLLER or (isinstance(value, int) and not isinstance(value, bool)):
        return value  # type: ignore[return-value]
    raise HttpError(400, f'a node is a broker id or "{CONTROLLER}", got {value!r}')


def _enum(kind: Any, value: object, name: str) -> int:
    """A Kafka API key or error code by number or by Kafka's name."""
    try:
        if isinstance(value, str):
            return int(kind[value.upper()])
        if isinstance(value, int) and not isinstance(value, bool):
            return int(kind(value))
    except (KeyError, ValueError):
        pass
    raise HttpError(400, f'"{name}" {value!r} is not a Kafka {kind.__name__} name or number')
