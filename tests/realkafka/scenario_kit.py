"""What every realkafka scenario needs, whichever cluster it runs on: unique names, ports of
the bootstrap server, a partition's leader and a coordinator, topics created and led, and loops
and calls bounded by a deadline.

Every loop here is bounded by a deadline.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from realkafka_wire import WireConnection

from kipwire.codec import ApiKey, CoordinatorType, ErrorCode

POLL_TIMEOUT_S = 30.0


def unique(prefix: str) -> str:
    """A topic or group name no other test uses."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def first_port(bootstrap: str) -> int:
    """The port of the first bootstrap server."""
    return int(bootstrap.split(",")[0].rsplit(":", 1)[1])


def bounded(fn: Callable[[], Any], timeout: float, what: str) -> Any:
    """fn() in a daemon thread; TimeoutError if it has not returned within `timeout`.

    For client calls that take no timeout of their own (kafka-python's commit/abort wait for
    the broker without bound): a broker that never answers fails the test instead of hanging it.
    """
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as e:  # handed to the caller's thread below
            outcome["error"] = e

    thread = threading.Thread(target=run, daemon=True, name=what)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TimeoutError(f"{what}: no result within {timeout:.0f} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def deadline_loop(timeout: float) -> Callable[[], bool]:
    """A predicate that holds until `timeout` seconds from now."""
    deadline = time.monotonic() + timeout
    return lambda: time.monotonic() < deadline


def admin_client(bootstrap: str) -> Any:
    """A quiet confluent-kafka AdminClient on the cluster."""
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})


def create_topic(
    bootstrap: str,
    name: str,
    partitions: int = 1,
    replication: int = 1,
    config: dict[str, str] | None = None,
) -> str:
    """Create a topic with confluent-kafka's AdminClient and wait until it has leaders."""
    from confluent_kafka.admin import NewTopic

    admin = admin_client(bootstrap)
    topic = NewTopic(name, partitions, replication, config=config or {})
    admin.create_topics([topic], operation_timeout=30)[name].result(timeout=30)

    def led() -> bool:
        md = admin.list_topics(topic=name, timeout=5).topics.get(name)
        return bool(
            md is not None
            and md.error is None
            and len(md.partitions) == partitions
            and all(p.leader >= 0 for p in md.partitions.values())
        )

    loop = deadline_loop(POLL_TIMEOUT_S)
    while loop():
        if led():
            return name
        time.sleep(0.1)
    raise TimeoutError(f"topic {name} has no leader for every partition")


def leader_port(bootstrap: str, topic: str, partition: int = 0) -> int:
    """The port of the partition's leader; the first bootstrap server's when it has none.

    Raw requests go to the leader, as a client sends them: on a cluster of several brokers a
    follower would answer NOT_LEADER_OR_FOLLOWER.
    """
    with WireConnection("127.0.0.1", first_port(bootstrap)) as conn:
        body = conn.call(
            ApiKey.METADATA, 12, {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
        ).body
    ports = {b.node_id: b.port for b in body.brokers}
    for part in body.topics[0].partitions:
        if part.partition_index == partition and part.leader_id in ports:
            return ports[part.leader_id]
    return first_port(bootstrap)


def coordinator_port(bootstrap: str, key: str, key_type: CoordinatorType) -> int:
    """The port of the group or transaction coordinator (`key_type`) of `key`."""
    request = {"key_type": key_type, "coordinator_keys": [key]}
    loop = deadline_loop(POLL_TIMEOUT_S)
    while loop():
        with WireConnection("127.0.0.1", first_port(bootstrap)) as conn:
            found = conn.call(ApiKey.FIND_COORDINATOR, 4, request).body.coordinators[0]
        if found.error_code == ErrorCode.NONE:
            return found.port
        # the coordinator's internal topic is still being created: ask again
        time.sleep(0.2)
    raise TimeoutError(f"no coordinator for {key}")


def error_name(code: int) -> str:
    """The name of an error code, as Kafka spells it."""
    return ErrorCode(code).name


#: Kafka may answer these for a moment after a topic is created, though Metadata shows the
#: leader: the broker has not applied its leadership yet. Clients retry them; so do the mistakes.
NOT_READY = {"NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE", "UNKNOWN_LEADER_EPOCH"}


def once_ready(ask: Callable[[], str]) -> str:
    """ask() again while it answers that the partition's leader is not ready (bounded)."""
    loop = deadline_loop(POLL_TIMEOUT_S)
    answer = ask()
    while answer in NOT_READY and loop():
        time.sleep(0.1)
        answer = ask()
    return answer
