"""The cluster's metrics (`cluster_metrics`) and a tiny Prometheus endpoint (`serve_metrics`).

The controller's KIP-966 metrics come from `Controller.metrics()`; the high watermark of each
partition is read from its leader, as a broker's own gauge would be, and so are its log's
start offset, size in bytes and segment count (Kafka's `kafka.log:type=Log` LogStartOffset,
Size and NumLogSegments), which show retention at work; `client_telemetry` is what clients
pushed (KIP-714), decoded by each broker's `broker.client_metrics.ClientMetrics`.
"""

from __future__ import annotations

import errno
import inspect
from collections.abc import Mapping
from typing import Any, Protocol

import trio

from .broker.client_metrics import ClientMetrics
from .broker.log import PartitionLog
from .controller import Controller

PREFIX = "kipwire_"
#: Gauges keyed "topic-partition" in the metrics dict, exported with topic and partition labels.
PER_PARTITION = {
    "electable_leaders",
    "high_watermark",
    "log_start_offset",
    "log_size_bytes",
    "log_segments",
}
#: Pushed client metrics, exported one gauge per metric name with the client's labels.
TELEMETRY = "client_telemetry"
_MAX_REQUEST = 8192
_REQUEST_TIMEOUT = 5.0


class _Broker(Protocol):
    running: bool
    logs: Mapping[tuple[str, int], PartitionLog]
    client_metrics: ClientMetrics


class Cluster(Protocol):
    """What the metrics read of a cluster: its controller and its brokers by id."""

    controller: Controller

    @property
    def nodes(self) -> Mapping[int, _Broker]: ...

    def metrics(self) -> Any: ...


async def settled(answer: Any) -> Any:
    """A cluster method's answer: in process mode `metrics()` and `describe_partition()` ask
    the brokers' processes and are awaited; in-process they answer at once."""
    return await answer if inspect.isawaitable(answer) else answer


def leader_high_watermark(cluster: Cluster, topic: str, index: int) -> int | None:
    """The high watermark the partition's leader holds; None without a running leader."""
    leader = cluster.nodes.get(cluster.controller.partition(topic, index).leader)
    if leader is None or not leader.running:
        return None
    log = leader.logs.get((topic, index))
    return log.high_watermark if log is not None else 0


def client_telemetry(cluster: Cluster) -> dict[str, dict[str, Any]]:
    """What clients pushed (KIP-714), by client instance id: the client id, its software name
    and the latest value of each metric (summed over its data points)."""
    pushed: dict[str, dict[str, Any]] = {}
    for _, broker in sorted(cluster.nodes.items()):
        for instance, seen in broker.client_metrics.pushed().items():
            known = pushed.setdefault(instance, {**seen, "metrics": {}})
            known["metrics"].update(seen["metrics"])
    return pushed


def cluster_metrics(cluster: Cluster, telemetry: bool = True) -> dict[str, Any]:
    """The controller's metrics plus, per "topic-partition" with a running leader, the leader's
    `high_watermark`, `log_start_offset`, `log_size_bytes` and `log_segments`,
    and `client_telemetry` (what clients pushed, by client instance id)."""
    metrics = dict(cluster.controller.metrics())
    hwm, start, size, segments = {}, {}, {}, {}
    for p in cluster.controller.state.partitions():
        leader = cluster.nodes.get(p.leader)
        if leader is None or not leader.running:
            continue
        name = f"{p.topic}-{p.partition_id}"
        log = leader.logs.get((p.topic, p.partition_id))
        hwm[name] = log.high_watermark if log is not None else 0
        start[name] = log.log_start_offset if log is not None else 0
        size[name] = log.size if log is not None else 0
        segments[name] = log.segment_count if log is not None else 1
    metrics.update(
        high_watermark=hwm, log_start_offset=start, log_size_bytes=size, log_segments=segments
    )
    metrics["client_telemetry"] = client_telemetry(cluster) if telemetry else {}
    return metrics


def prometheus_text(metrics: dict[str, Any]) -> str:
    """The metrics in Prometheus' text exposition format (every metric a gauge)."""
    lines = []
    for name, value in sorted(metrics.items()):
        if name == TELEMETRY:
            lines.extend(_telemetry_lines(value))
            continue
        metric = PREFIX + name
        lines.append(f"# TYPE {metric} gauge")
        if name in PER_PARTITION:
            for key, number in sorted(value.items()):
                topic, partition = key.rsplit("-", 1)
                label = topic.replace("\\", "\\\\").replace('"', '\\"')
                lines.append(f'{metric}{{topic="{label}",partition="{partition}"}} {number}')
        else:
            lines.append(f"{metric} {value}")
    return "\n".join(lines) + "\n"


def _label(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _telemetry_lines(pushed: dict[str, dict[str, Any]]) -> list[str]:
    """One gauge per pushed metric name (dots as underscores), labelled by client."""
    by_metric: dict[str, list[str]] = {}
    for instance, seen in sorted(pushed.items()):
        labels = (
            f'client_instance_id="{instance}",client_id="{_label(seen["client_id"])}",'
            f'client_software_name="{_label(seen["client_software_name"])}"'
        )
        for name, value in seen["metrics"].items():
            metric = PREFIX + "client_" + "".join(c if c.isalnum() else "_" for c in name)
            by_metric.setdefault(metric, []).append(f"{metric}{{{labels}}} {value}")
    lines = []
    for metric, samples in sorted(by_metric.items()):
        lines.append(f"# TYPE {metric} gauge")
        lines.extend(samples)
    return lines


def _response(status: str, body: str, content_type: str = "text/plain; charset=utf-8") -> bytes:
    data = body.encode()
    head = (
        f"HTTP/1.0 {status}\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode("ascii") + data


async def _answer(stream: trio.SocketStream, cluster: Cluster) -> None:
    request = b""
    with trio.move_on_after(_REQUEST_TIMEOUT):
        while b"\r\n\r\n" not in request and len(request) < _MAX_REQUEST:
            data = await stream.receive_some(_MAX_REQUEST)
            if not data:
                break
            request += data
    words = request.split(b"\r\n", 1)[0].split()
    if len(words) != 3 or not words[2].startswith(b"HTTP/"):
        reply = _response("400 Bad Request", "expected: GET /metrics HTTP/1.0\n")
    elif words[0] != b"GET":
        reply = _response("405 Method Not Allowed", "only GET is served\n")
    elif words[1].split(b"?", 1)[0] != b"/metrics":
        reply = _response("404 Not Found", "metrics are at /metrics\n")
    else:
        # the cluster's own metrics(): in process mode it asks the brokers' processes
        text = prometheus_text(await settled(cluster.metrics()))
        reply = _response("200 OK", text, "text/plain; version=0.0.4; charset=utf-8")
    await stream.send_all(reply)


async def serve_metrics(
    cluster: Cluster,
    port: int,
    *,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve GET /metrics over HTTP/1.0 on 127.0.0.1:`port` (0: ephemeral); reports the port."""
    try:
        listeners = await trio.open_tcp_listeners(port, host="127.0.0.1")
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise OSError(exc.errno, f"metrics port {port} is already in use") from None
        raise

    async def handler(stream: trio.SocketStream) -> None:
        try:
            await _answer(stream, cluster)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the scraper went away; nothing to answer
        finally:
            await stream.aclose()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.serve_listeners, handler, listeners)
        task_status.started(listeners[0].socket.getsockname()[1])
