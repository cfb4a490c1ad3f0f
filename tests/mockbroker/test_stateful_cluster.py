"""A hypothesis stateful test against the running cluster, under trio's MockClock (virtual time):
random schedules of clean and unclean stops, restarts (one at a time or together, as after a
controller failover), flushes, network cuts, isolation, heals and min ISR changes while
codec-built idempotent acks=all producers write to three 3-replica partitions: two of topic
`t` (the cluster's min ISR) and one of topic `u` (its own, higher min ISR).

After every step, for every partition: ISR and ELR are disjoint, no broker restarted after an
unclean shutdown sits in the ELR before it has rejoined the ISR, the high watermark never moves
back, and a consumer sees offsets in order, without duplicates, below the high watermark.

Liveness, after every heal (in the schedule, and at the end once every broker is started too):
within the cluster's own bound (broker.session.timeout.ms + replica.lag.time.max.ms + one
metadata fetch interval), a partition that can have a leader has one that serves it, its ISR
holds every running replica, and its high watermark reaches the last acknowledged offset + 1
when enough replicas run to move it. At the end no acknowledged record is lost.

Both hold unless Kafka's own rules allow the loss: more than min ISR - 1 unclean shutdowns, or
a min.insync.replicas change that cleared a partition's ELR or LastKnownElr (kip-rules D.19:
Kafka 4.x writes ClearElrRecord on any such change, so an ELR member that held acknowledged
records is no longer electable, and a leaderless partition may have no electable replica left).
A failing schedule shrinks to a short story, printed with the failure.

KIPWIRE_EXAMPLES sets the number of schedules (default 50); `make test-deep` runs 5,000.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, event, example, given, note, settings
from hypothesis import strategies as st
from trio_client import AcksAllProducer, WireError, call_broker, read_partition

from kipwire.codec import AlterConfigOp, ApiKey, ConfigResourceType, ErrorCode
from kipwire.mockbroker import Semantics, open_cluster
from kipwire.mockbroker.broker.controller_channel import METADATA_FETCH_WAIT_MS
from kipwire.mockbroker.cluster import Cluster
from kipwire.mockbroker.network import CONTROLLER

EXAMPLES = int(os.environ.get("KIPWIRE_EXAMPLES", "50"))
BROKERS = (1, 2, 3)
NODES = (*BROKERS, CONTROLLER)
TOPIC = "t"
#: The second topic, with a min ISR of its own (a topic config) above the cluster's.
OTHER_TOPIC, OTHER_MIN_ISR = "u", 3
INITIAL_MIN_ISR = 2
PARTITIONS = ((TOPIC, 0), (TOPIC, 1), (OTHER_TOPIC, 0))
#: Virtual seconds a step may take before the schedule is declared stuck.
STEP_LIMIT = 120.0
#: Virtual seconds a new leader may take to reach the high watermark its predecessor had.
HWM_CATCH_UP = 5.0
#: Every ordered pair of distinct nodes, for cuts.
PAIRS = [(a, b) for a in NODES for b in NODES if a != b]

produce = st.tuples(st.just("produce"), st.sampled_from(range(len(PARTITIONS))), st.integers(1, 4))
steps = st.one_of(
    # weighted: a schedule without writes checks little
    produce,
    produce,
    produce,
    st.tuples(st.just("stop"), st.sampled_from(BROKERS), st.sampled_from(["clean", "unclean"])),
    st.tuples(st.just("start"), st.sampled_from(BROKERS)),
    st.tuples(st.just("start_together")),
    st.tuples(st.just("flush"), st.sampled_from(BROKERS)),
    st.sampled_from(PAIRS).map(lambda pair: ("cut", *pair)),
    st.tuples(st.just("isolate"), st.sampled_from(BROKERS)),
    st.tuples(st.just("heal")),
    st.tuples(st.just("min_isr"), st.sampled_from([TOPIC, OTHER_TOPIC]), st.integers(1, 3)),
    st.tuples(st.just("wait"), st.sampled_from([0.5, 3.0, 10.0])),
)


@dataclass
class Part:
    """One partition's producer and what the schedule has seen of it."""

    producer: AcksAllProducer
    high_watermark: int = 0
    #: a min ISR change emptied its ELR or LastKnownElr (ClearElrRecord)
    elr_cleared: bool = False
    #: brokers restarted after an unclean shutdown that have not rejoined its ISR since
    unclean_restarted: set[int] = field(default_factory=set)


@dataclass
class Run:
    """What one schedule has done so far, and what it must not break."""

    cluster: Cluster
    parts: dict[tuple[str, int], Part]
    story: list[str] = field(default_factory=list)
    min_isr: dict[str, int] = field(
        default_factory=lambda: {TOPIC: INITIAL_MIN_ISR, OTHER_TOPIC: OTHER_MIN_ISR}
    )
    lowest_min_isr: dict[str, int] = field(
        default_factory=lambda: {TOPIC: INITIAL_MIN_ISR, OTHER_TOPIC: OTHER_MIN_ISR}
    )
    unclean_stops: int = 0
    down_unclean: set[int] = field(default_factory=set)
    #: controller log entries already looked at for ISR members
    log_seen: int = 0

    def tell(self, line: str) -> None:
        self.story.append(line)

    def fail(self, why: str) -> None:
        story = "\n".join(f"  {i + 1}. {line}" for i, line in enumerate(self.story))
        raise AssertionError(f"{why}\nschedule:\n{story}")

    @property
    def producer(self) -> AcksAllProducer:
        """The producer of t-0, the partition the single-partition stories write to."""
        return self.parts[TOPIC, 0].producer

    def loss_may_happen(self, key: tuple[str, int]) -> bool:
        """Kafka's rules allow acknowledged records of this partition to be lost."""
        unclean = self.unclean_stops > self.lowest_min_isr[key[0]] - 1
        return unclean or self.parts[key].elr_cleared

    @property
    def loss_allowed(self) -> bool:
        """More unclean shutdowns than min ISR - 1 (or a cleared ELR): t-0 may lose records."""
        return self.loss_may_happen((TOPIC, 0))


def _reaches_controller(cluster: Cluster, broker: int) -> bool:
    return not cluster.network.is_cut(broker, CONTROLLER)


def liveness_bound(cluster: Cluster) -> float:
    """Virtual seconds a healed cluster may take to lead, fill the ISR and move the HWM: the
    session timeout (a fenced broker's return), the replica lag time (a follower's catch-up)
    and one metadata fetch (the brokers learning it), from the cluster's own settings."""
    session = int(cluster.config["broker.session.timeout.ms"])
    lag = int(cluster.config["replica.lag.time.max.ms"])
    return (session + lag + METADATA_FETCH_WAIT_MS) / 1000


async def _set_min_isr(run: Run, topic: str, value: int) -> bool:
    cluster = run.cluster
    admin = [b for b in BROKERS if cluster.node(b).running and _reaches_controller(cluster, b)]
    if not admin:
        return False
    body = {
        "resources": [
            {
                "resource_type": ConfigResourceType.TOPIC,
                "resource_name": topic,
                "configs": [
                    {
                        "name": "min.insync.replicas",
                        "config_operation": AlterConfigOp.SET,
                        "value": str(value),
                    }
                ],
            }
        ],
        "validate_only": False,
    }
    # the partitions whose ELR or LastKnownElr a ClearElrRecord empties (kip-rules D.19; none
    # when the topic already had the value: Kafka then writes no ConfigRecord)
    holding = [
        key
        for key in run.parts
        if key[0] == topic
        and (cluster.partition(*key).elr or cluster.partition(*key).last_known_elr)
    ]
    start = cluster.controller.end_offset
    answer = await call_broker(cluster, admin[0], ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body, 10.0)
    if answer["responses"][0]["error_code"] != ErrorCode.NONE:
        return False
    entries = cluster.controller.log[start:]
    cleared_at = next(
        (
            i
            for i, entry in enumerate(entries)
            if entry.name == "ClearElrRecord" and entry.record.topic_name in (topic, "")
        ),
        None,
    )
    if cleared_at is None:
        return True
    # a fence while the call waited may have given a partition its ELR just before the clear
    ids = {(cluster.partition(*key).topic_id, key[1]): key for key in run.parts if key[0] == topic}
    for entry in entries[:cleared_at]:
        record = entry.record
        if entry.name == "PartitionChangeRecord" and (
            record.eligible_leader_replicas or record.last_known_elr
        ):
            key = ids.get((record.topic_id, record.partition_id))
            if key is not None:
                holding.append(key)
    for key in holding:
        run.parts[key].elr_cleared = True
    return True


async def _start_stopped(run: Run, brokers: list[int]) -> list[int]:
    """Start the given stopped brokers that reach the controller, concurrently."""
    cluster = run.cluster
    chosen = [b for b in brokers if not cluster.node(b).running and _reaches_controller(cluster, b)]
    async with trio.open_nursery() as nursery:
        for broker in chosen:
            nursery.start_soon(cluster.start_broker, broker)
    for broker in chosen:
        if broker in run.down_unclean:
            run.down_unclean.discard(broker)
            for part in run.parts.values():
                part.unclean_restarted.add(broker)
    return chosen


async def _step(run: Run, step: tuple) -> None:
    cluster, kind = run.cluster, step[0]
    if kind == "produce":
        key = PARTITIONS[step[1]]
        producer = run.parts[key].producer
        acked = 0
        for _ in range(step[2]):
            acked += await producer.send(f"r{len(producer.acked)}-{len(run.story)}".encode())
        run.tell(f"produce {step[2]} to {key[0]}-{key[1]}: {acked} acknowledged")
    elif kind == "stop":
        broker, how = step[1], step[2]
        node = cluster.node(broker)
        if not node.running or (how == "clean" and not _reaches_controller(cluster, broker)):
            run.tell(f"stop {broker} {how}: skipped")
            return
        await cluster.stop_broker(broker, clean=how == "clean")
        if how == "unclean":
            run.unclean_stops += 1
            run.down_unclean.add(broker)
        run.tell(f"stop {broker} {how}")
    elif kind == "start":
        started = await _start_stopped(run, [step[1]])
        run.tell(f"start {step[1]}" + ("" if started else ": skipped"))
    elif kind == "start_together":
        started = await _start_stopped(run, list(BROKERS))
        run.tell(f"start {started} together" if started else "start together: skipped")
    elif kind == "flush":
        if not cluster.node(step[1]).running:
            run.tell(f"flush {step[1]}: skipped")
            return
        cluster.flush(step[1])
        run.tell(f"flush {step[1]}")
    elif kind == "cut":
        cluster.partition_network(step[1], step[2])
        run.tell(f"cut {step[1]} <-> {step[2]}")
    elif kind == "isolate":
        cluster.isolate(step[1])
        run.tell(f"isolate {step[1]}")
    elif kind == "heal":
        cluster.heal()
        run.tell("heal")
        await _check_live(run)
    elif kind == "min_isr":
        topic, value = step[1], step[2]
        if await _set_min_isr(run, topic, value):
            run.min_isr[topic] = value
            run.lowest_min_isr[topic] = min(run.lowest_min_isr[topic], value)
            run.tell(f"{topic} min.insync.replicas = {value}")
        else:
            run.tell(f"{topic} min.insync.replicas = {value}: not applied")
    elif kind == "wait":
        await trio.sleep(step[1])
        run.tell(f"wait {step[1]} s")


def _high_watermark(cluster: Cluster, key: tuple[str, int]) -> int | None:
    return cluster.metrics()["high_watermark"].get(f"{key[0]}-{key[1]}")


async def _check(run: Run) -> None:
    """The invariants that hold after every step."""
    _note_isr_members(run)
    for key in run.parts:
        await _check_partition(run, key)


def _note_isr_members(run: Run) -> None:
    """A broker restarted after an unclean shutdown rejoins the ISR as soon as a partition
    record names it, even when it has left again before the step ends (then it holds the data
    to the HWM, and a fence may put it in the ELR): read the records since the last step."""
    cluster = run.cluster
    keys = {(cluster.partition(*key).topic_id, key[1]): key for key in run.parts}
    for entry in cluster.controller.log[run.log_seen :]:
        if entry.name in ("PartitionRecord", "PartitionChangeRecord") and entry.record.isr:
            key = keys.get((entry.record.topic_id, entry.record.partition_id))
            if key is not None:
                run.parts[key].unclean_restarted -= set(entry.record.isr)
    run.log_seen = len(cluster.controller.log)


async def _check_partition(run: Run, key: tuple[str, int]) -> None:
    cluster, part = run.cluster, run.parts[key]
    p = cluster.partition(*key)
    name = f"{key[0]}-{key[1]}"
    if set(p.isr) & set(p.elr):
        run.fail(f"{name}: ISR {p.isr} and ELR {p.elr} overlap")
    part.unclean_restarted -= set(p.isr)
    if part.unclean_restarted & set(p.elr):
        run.fail(f"{name}: ELR {p.elr} holds {part.unclean_restarted}, restarted after unclean")
    hwm = _high_watermark(cluster, key)
    if hwm is not None and hwm < part.high_watermark and not run.loss_may_happen(key):
        # A new leader starts from the high watermark it had as a follower, one fetch behind, as
        # in Kafka; it must catch up at once, unless its ISR is below min ISR (B.6 holds it).
        def recovered() -> bool:
            now = _high_watermark(cluster, key)
            isr = cluster.partition(*key).isr
            return (now or 0) >= part.high_watermark or len(isr) < min(run.min_isr[key[0]], 3)

        try:
            await cluster.wait_until(recovered, timeout=HWM_CATCH_UP)
        except TimeoutError:
            run.fail(f"{name}: high watermark moved back from {part.high_watermark} to {hwm}")
        hwm = _high_watermark(cluster, key)
    if hwm is not None:
        part.high_watermark = max(part.high_watermark, hwm)
    if p.leader in cluster.nodes and cluster.node(p.leader).running:
        try:
            top, records = await read_partition(cluster, p.leader, *key)
        except WireError:
            return  # a leader that no longer leads (cut off, not yet told) refuses the fetch
        offsets = [offset for offset, _ in records]
        if offsets != sorted(set(offsets)) or any(o >= top for o in offsets):
            run.fail(f"{name}: consumer saw offsets {offsets} with high watermark {top}")


def _may_stay_leaderless(run: Run, key: tuple[str, int]) -> bool:
    """No running broker is electable by Kafka's rules (E.20-21): none in the ISR, none in the
    ELR when the ISR is empty, and no last known leader when both are empty."""
    cluster = run.cluster
    p = cluster.partition(*key)
    running = {b for b in BROKERS if cluster.node(b).running}
    if p.isr:
        return not set(p.isr) & running
    if p.elr:
        return not set(p.elr) & running
    return not set(p.last_known_elr) & running


def _live(run: Run, key: tuple[str, int]) -> str | None:
    """What keeps a partition from being live now (None once it is): a running leader, every
    running replica in the ISR, the HWM at the last acknowledged offset + 1 when it can move."""
    cluster = run.cluster
    p = cluster.partition(*key)
    running = {b for b in BROKERS if cluster.node(b).running}
    if p.leader not in running:
        return f"leader {p.leader} with ISR {p.isr}, ELR {p.elr}, running {sorted(running)}"
    if not running <= set(p.isr):
        return f"ISR {p.isr} lacks running replicas {sorted(running - set(p.isr))}"
    expected = max(run.parts[key].producer.acked, default=-1) + 1
    hwm = _high_watermark(cluster, key)
    if len(p.isr) >= min(run.min_isr[key[0]], 3) and (hwm or 0) < expected:
        return f"high watermark {hwm} is below {expected}, the last acknowledged offset + 1"
    return None


async def _check_live(run: Run) -> None:
    """Liveness after a heal: within the cluster's bound every partition that can have a leader
    is led, served, fully in sync, and its HWM covers what was acknowledged."""
    cluster = run.cluster
    deadline = trio.current_time() + liveness_bound(cluster)
    for key in run.parts:
        name = f"{key[0]}-{key[1]}"
        while True:
            if _may_stay_leaderless(run, key) and cluster.partition(*key).leader == -1:
                break
            why = _live(run, key)
            if why is None:
                try:
                    await read_partition(cluster, cluster.partition(*key).leader, *key)
                    break
                except WireError as exc:
                    why = f"the leader does not serve it: {exc}"
            if trio.current_time() >= deadline:
                if why.startswith("high watermark") and run.loss_may_happen(key):
                    break
                if run.loss_may_happen(key) and _may_stay_leaderless(run, key):
                    break
                bound = liveness_bound(cluster)
                run.fail(f"{name} not live {bound} s after the heal: {why}")
            await trio.sleep(0.05)


async def _final_check(run: Run) -> None:
    """Heal, start every broker, then every partition is live and every acknowledged record
    is readable (unless Kafka's rules allow the loss)."""
    cluster = run.cluster
    cluster.heal()
    for broker in BROKERS:
        if not cluster.node(broker).running:
            await cluster.start_broker(broker)
    run.tell("heal and start every broker")
    deadline = trio.current_time() + liveness_bound(cluster)
    for key, part in run.parts.items():
        name = f"{key[0]}-{key[1]}"
        expected = max(part.producer.acked, default=-1) + 1
        records: list[tuple[int, bytes]] = []
        while True:
            why = _live(run, key)
            if why is None:
                leader = cluster.partition(*key).leader
                try:
                    records = (await read_partition(cluster, leader, *key))[1]
                except WireError as exc:
                    why = f"the leader does not serve it: {exc}"
            if why is None or trio.current_time() >= deadline:
                break
            await trio.sleep(0.05)
        if why is not None:
            if run.loss_may_happen(key):
                continue
            if why.startswith("high watermark"):
                run.fail(
                    f"{name}: high watermark never reached {expected}, "
                    "the last acknowledged offset + 1"
                )
            run.fail(f"{name} not live {liveness_bound(cluster)} s after heal and start: {why}")
        seen = dict(records)
        lost = {o: v for o, v in part.producer.acked.items() if seen.get(o) != v}
        note(f"{name}: acknowledged {len(part.producer.acked)}, lost {len(lost)}")
        event(f"acknowledged records: {'none' if not part.producer.acked else 'some'}")
        event(f"loss allowed: {run.loss_may_happen(key)}, lost: {bool(lost)}")
        if lost and not run.loss_may_happen(key):
            run.fail(
                f"{name}: acknowledged records lost: {sorted(lost)} of {len(part.producer.acked)}"
            )


async def _start(cluster: Cluster) -> Run:
    await cluster.create_topic(TOPIC, partitions=2, replication_factor=3)
    await cluster.create_topic(
        OTHER_TOPIC,
        partitions=1,
        replication_factor=3,
        config={"min.insync.replicas": OTHER_MIN_ISR},
    )
    parts = {}
    for key in PARTITIONS:
        producer = AcksAllProducer(cluster, *key)
        await producer.init(1)
        parts[key] = Part(producer)
    return Run(cluster, parts)


async def _play(schedule: list[tuple]) -> None:
    config = {"min.insync.replicas": INITIAL_MIN_ISR}
    async with open_cluster(brokers=len(BROKERS), config=config) as cluster:
        run = await _start(cluster)
        try:
            # every story starts with data to lose
            opening = [("produce", i, 2) for i in range(len(PARTITIONS))]
            for step in [*opening, *schedule]:
                with trio.move_on_after(STEP_LIMIT) as limit:
                    await _step(run, step)
                if limit.cancelled_caught:
                    run.fail(f"step {step} took over {STEP_LIMIT} s of virtual time")
                await _check(run)
            with trio.move_on_after(STEP_LIMIT) as limit:
                await _final_check(run)
            if limit.cancelled_caught:
                run.fail("the cluster did not settle after heal and restart")
        finally:
            note("\n".join(run.story))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(steps, min_size=1, max_size=16))
# issue 17: the leader never served t-0 (broker 1's old incarnation replayed into its new image)
@example(
    [("stop", 2, "clean"), ("isolate", 3), ("produce", 0, 1), ("min_isr", TOPIC, 1)]
    + [("stop", 1, "clean")]
)
# issue 17: the min ISR change cleared the ELR holding the acknowledged records (D.19), then
# the emptied last known leader was elected (E.21.3): Kafka's own loss, allowed
@example(
    [("stop", 2, "clean"), ("cut", 1, 3), ("produce", 0, 1), ("min_isr", TOPIC, 2)]
    + [("stop", 1, "unclean")]
)
# issue 17: the min ISR change cleared ELR and LastKnownElr of a leaderless partition: no
# replica is electable again (Kafka's too), allowed
@example(
    [("isolate", 1), ("produce", 0, 2), ("stop", 3, "clean"), ("heal",), ("stop", 2, "clean")]
    + [("min_isr", TOPIC, 1)]
)
# u-0 (min ISR 3): broker 1 rejoined the ISR after its unclean restart and was fenced into the
# ELR within one step; the checker, looking only between steps, had not seen it rejoin
@example([("stop", 1, "unclean"), ("start", 1), ("stop", 1, "unclean")])
# issue 17, seed 20261129 of 20,000: broker 1's fence gave t-0 its ELR while the min ISR change
# was under way, and the ClearElrRecord emptied it; the checker had looked before the change
@example(
    [("cut", 1, 3), ("produce", 0, 1), ("isolate", 1), ("produce", 0, 1), ("min_isr", TOPIC, 2)]
    + [("stop", 2, "unclean")]
)
def test_acknowledged_records_survive_random_fault_schedules(schedule):
    trio.run(_play, schedule, clock=trio.testing.MockClock(autojump_threshold=0))


def test_the_checker_catches_the_loss_elr_exists_to_prevent():
    """KIP-966's story with ELR off (Kafka 3.9): both followers cut off, the leader, last ISR
    member, shut down uncleanly and re-elected empty: the acknowledged records are gone, and the
    final check says so although only one broker shut down uncleanly."""

    async def story() -> str:
        config = {"min.insync.replicas": INITIAL_MIN_ISR}
        async with open_cluster(
            brokers=len(BROKERS),
            config=config,
            semantics=Semantics.KAFKA_3_9,
            features={"eligible.leader.replicas.version": 0},
        ) as cluster:
            run = await _start(cluster)
            leader = cluster.partition(TOPIC, 0).leader
            first, second = [b for b in BROKERS if b != leader]
            schedule = [("produce", 0, 3), ("isolate", first), ("wait", 3.0), ("produce", 0, 2)]
            schedule += [("isolate", second), ("wait", 3.0), ("stop", leader, "unclean")]
            for step in schedule:
                await _step(run, step)
                await _check(run)
            assert len(run.producer.acked) == 5 and not run.loss_allowed
            with pytest.raises(AssertionError) as failure:
                await _final_check(run)
            return str(failure.value)

    message = trio.run(story, clock=trio.testing.MockClock(autojump_threshold=0))
    assert "lost" in message or "never reached" in message
    assert " unclean\n" in message  # the story is printed with the failure
