"""KIP-966 in action: a topic with RF=3 and min.insync.replicas=2 loses its brokers one by one
(clean shutdowns, then a hard kill), gets them back, loses two again and has its min ISR set;
after each step DescribeTopicPartitions (sent with kipwire.codec) says what the controller
decided.

`run_story` takes any cluster with the `StoryCluster` methods, so the same story runs against
real Kafka and against kipwire's MockCluster. `EXPECTED` is the story kip-rules.md
predicts and real Kafka tells (4.1.2 and 4.4.0 alike): per step, ISR, ELR, LastKnownElr, leader.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from kafka_capture import Recording
from realkafka_wire import call

from kipwire.codec import AlterConfigOp, ApiKey, ConfigResourceType, ErrorCode

TOPIC = "elr-story"
REPLICAS = [1, 2, 3]
STEP_TIMEOUT_S = 60.0


class StoryCluster(Protocol):
    """What the story needs of a cluster: node control and a broker that stays up (node 0)."""

    def stop_node(self, node_id: int) -> Any: ...
    def hard_kill(self, node_id: int) -> None: ...
    def restart(self, node_id: int) -> None: ...
    def observer_port(self) -> int: ...


@dataclass(frozen=True)
class PartitionView:
    """Partition 0 as DescribeTopicPartitions shows it; sets, since the order is not a rule."""

    leader: int
    isr: frozenset[int]
    elr: frozenset[int]
    last_known_elr: frozenset[int]

    def as_json(self) -> dict[str, Any]:
        """Plain JSON (sorted lists) for the data file."""
        return {k: sorted(v) if isinstance(v, frozenset) else v for k, v in asdict(self).items()}


@dataclass
class StoryRun:
    """The story's steps as seen, and the cluster's traffic meanwhile."""

    steps: list[tuple[str, PartitionView | None]]
    recording: Recording


def view(leader: int, isr: list[int], elr: list[int], lke: list[int]) -> PartitionView:
    """A PartitionView from lists."""
    return PartitionView(leader, frozenset(isr), frozenset(elr), frozenset(lke))


# (step name, what is done, the state kip-rules.md predicts once the controller has acted)
EXPECTED: list[tuple[str, str, PartitionView]] = [
    ("created", "RF=3 on brokers 1,2,3, min.insync.replicas=2", view(1, [1, 2, 3], [], [])),
    # D.13: the target ISR (2) is not below min ISR, so the ELR stays empty
    ("stop 3", "SIGTERM broker 3 (controlled shutdown)", view(1, [1, 2], [], [])),
    # D.13: ISR [1] < 2, ELR = (ELR + current ISR) - target ISR = [2]
    ("stop 2", "SIGTERM broker 2 (controlled shutdown)", view(1, [1], [2], [])),
    # D.17 fence on session timeout: ISR [] (D.15), ELR [1, 2]; no acceptable leader (E.20);
    # D.16: ISR=[] writes LastKnownElr=[last leader]
    ("kill 1", "SIGKILL broker 1 (no clean shutdown)", view(-1, [], [1, 2], [1])),
    # D.18 [4.x]: 2 stopped cleanly, so it comes back on the fence path and keeps its ELR seat;
    # unfenced, it is elected from the ELR (E.20b, E.23) and LastKnownElr is cleared (D.16)
    ("restart 2", "start broker 2 again (it shut down cleanly)", view(2, [2], [1], [])),
    # D.18: 1 was killed, its registration takes the unclean path: it leaves the ELR, then
    # catches up and rejoins the ISR; with ISR size 2 the ELR is [] (D.13)
    ("restart 1", "start broker 1 again (it was killed)", view(2, [1, 2], [], [])),
    ("restart 3", "start broker 3 again", view(2, [1, 2, 3], [], [])),
    ("stop 3 again", "SIGTERM broker 3", view(2, [1, 2], [], [])),
    # the leader's controlled shutdown: 1 is elected from the ISR (E.21), 2 enters the ELR
    ("stop 2 again", "SIGTERM broker 2, the leader", view(1, [1], [2], [])),
    # setting the value it already has changes nothing: the controller writes no ConfigRecord,
    # so no ClearElrRecord follows (the metadata-log test checks the records)
    ("same min isr", "set min.insync.replicas=2, its value already", view(1, [1], [2], [])),
    # D.19 [4.x]: a ConfigRecord on min.insync.replicas brings a ClearElrRecord: ELR and
    # LastKnownElr are emptied without a PartitionChangeRecord
    ("lower min isr", "set min.insync.replicas=1", view(1, [1], [], [])),
    ("restart 2 again", "start broker 2", view(1, [1, 2], [], [])),
    ("restart 3 again", "start broker 3", view(1, [1, 2, 3], [], [])),
]


def create_topic(port: int) -> None:
    """CreateTopics v7 with an explicit assignment [1, 2, 3] and min.insync.replicas=2."""
    body = call(
        port,
        ApiKey.CREATE_TOPICS,
        7,
        {
            "topics": [
                {
                    "name": TOPIC,
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "assignments": [{"partition_index": 0, "broker_ids": REPLICAS}],
                    "configs": [{"name": "min.insync.replicas", "value": "2"}],
                }
            ],
            "timeout_ms": 30000,
        },
    )
    code = body.topics[0].error_code
    if code:
        raise RuntimeError(f"CreateTopics {TOPIC}: {ErrorCode(code).name}")


def set_min_isr(port: int, value: str) -> None:
    """IncrementalAlterConfigs v1: SET the topic's min.insync.replicas."""
    body = call(
        port,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "resources": [
                {
                    "resource_type": ConfigResourceType.TOPIC,
                    "resource_name": TOPIC,
                    "configs": [
                        {
                            "name": "min.insync.replicas",
                            "config_operation": AlterConfigOp.SET,
                            "value": value,
                        }
                    ],
                }
            ],
            "validate_only": False,
        },
    )
    code = body.responses[0].error_code
    if code:
        raise RuntimeError(f"IncrementalAlterConfigs {TOPIC}: {ErrorCode(code).name}")


def describe(port: int) -> PartitionView | None:
    """DescribeTopicPartitions v0 of partition 0; None while the topic is unknown or errored."""
    body = call(
        port,
        ApiKey.DESCRIBE_TOPIC_PARTITIONS,
        0,
        {"topics": [{"name": TOPIC}], "response_partition_limit": 2000},
    )
    topic = body.topics[0]
    if topic.error_code or not topic.partitions:
        return None
    p = topic.partitions[0]
    return view(p.leader_id, p.isr_nodes, p.eligible_leader_replicas, p.last_known_elr)


def wait_for(port: int, want: PartitionView, timeout: float = STEP_TIMEOUT_S) -> PartitionView:
    """Poll DescribeTopicPartitions until it shows `want`; TimeoutError with the last view."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = describe(port)
        if last == want:
            return last
        time.sleep(0.2)
    raise TimeoutError(f"partition never became {want}; last seen {last}")


def run_story(
    cluster: StoryCluster, step_timeout: float = STEP_TIMEOUT_S
) -> list[tuple[str, PartitionView]]:
    """Run every step of EXPECTED; the state seen after each (the test compares).

    `step_timeout` bounds the wait for each step's state (a mock reaches it in well under 1 s).
    """
    port = cluster.observer_port()
    actions: dict[str, Callable[[], Any]] = {
        "created": lambda: create_topic(port),
        "stop 3": lambda: cluster.stop_node(3),
        "stop 2": lambda: cluster.stop_node(2),
        "kill 1": lambda: cluster.hard_kill(1),
        "restart 2": lambda: cluster.restart(2),
        "restart 1": lambda: cluster.restart(1),
        "restart 3": lambda: cluster.restart(3),
        "stop 3 again": lambda: cluster.stop_node(3),
        "stop 2 again": lambda: cluster.stop_node(2),
        "same min isr": lambda: set_min_isr(port, "2"),
        "lower min isr": lambda: set_min_isr(port, "1"),
        "restart 2 again": lambda: cluster.restart(2),
        "restart 3 again": lambda: cluster.restart(3),
    }
    seen = []
    for name, _what, want in EXPECTED:
        actions[name]()
        try:
            seen.append((name, wait_for(port, want, step_timeout)))
        except TimeoutError:
            # the story stops at the first step that differs: later steps build on it
            seen.append((name, describe(port)))
            break
    return seen
