"""Random fault schedules against the controller's invariants (hypothesis stateful testing).

KIPWIRE_EXAMPLES sets how many schedules run (default small, for the everyday suite)."""

from __future__ import annotations

import os

from controller_kit import (
    ELR,
    PRESETS,
    alter_partition,
    call,
    heartbeat,
    register,
    set_config,
    wire_response,
)
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from kipwire.codec import ApiKey, ElectionType, ErrorCode, decode_record, encode_record
from kipwire.mockbroker.controller import Controller, Semantics

BROKERS = (1, 2, 3, 4)
PARTITIONS = (("t", 0), ("t", 1), ("u", 0))
# GetReplicaLogInfo answers: mostly fine, sometimes an error the manager retries.
LOG_INFO_ERRORS = [ErrorCode.NONE] * 3 + [ErrorCode.NOT_LEADER_OR_FOLLOWER]


class ControllerMachine(RuleBasedStateMachine):
    """One controller under random faults, with a shadow replaying its log byte by byte."""

    ctl: Controller

    @initialize(semantics=st.sampled_from(PRESETS), elr=st.booleans())
    def start(self, semantics, elr: bool) -> None:
        self.ctl = Controller(semantics=semantics)
        self.generation = dict.fromkeys(BROKERS, 0)
        if elr:
            call(
                self.ctl,
                ApiKey.UPDATE_FEATURES,
                1,
                {"feature_updates": [{"feature": ELR, "max_version_level": 1, "upgrade_type": 1}]},
            )
        for b in BROKERS:
            register(self.ctl, b)
            heartbeat(self.ctl, b)
        call(
            self.ctl,
            ApiKey.CREATE_TOPICS,
            7,
            {
                "topics": [
                    {
                        "name": "t",
                        "num_partitions": 2,
                        "replication_factor": 3,
                        "configs": [{"name": "min.insync.replicas", "value": "2"}],
                    },
                    {"name": "u", "num_partitions": 1, "replication_factor": 4},
                ]
            },
        )
        self.shadow = Controller(semantics=semantics)
        self.seen = 0
        self.epochs: dict[tuple[str, int], tuple[int, int]] = {}
        # Replicas whose last restart was unclean and that have not rejoined that ISR since.
        self.unclean: dict[tuple[str, int], set[int]] = {k: set() for k in PARTITIONS}
        self.isr_seen = self.ctl.end_offset

    def _registered(self, b: int) -> bool:
        return b in self.ctl.state.brokers

    @rule(b=st.sampled_from(BROKERS))
    def fence(self, b: int) -> None:
        if self._registered(b):
            self.ctl.fence(b)

    @rule(b=st.sampled_from(BROKERS))
    def heartbeat_or_unfence(self, b: int) -> None:
        if self._registered(b):
            heartbeat(self.ctl, b)

    @rule(b=st.sampled_from(BROKERS), clean=st.booleans())
    def restart(self, b: int, clean: bool) -> None:
        if not self._registered(b):
            return
        self.ctl.fence(b)  # the old incarnation's session ends first
        previous = self.ctl.broker(b).epoch if clean else -1
        self.generation[b] += 1
        resp = register(self.ctl, b, self.generation[b], previous_epoch=previous)
        assert resp.error_code == ErrorCode.NONE
        if not clean and self.ctl.state.elr_enabled:
            for key in PARTITIONS:
                if b in self.ctl.partition(*key).replicas:
                    self.unclean[key].add(b)

    @rule(b=st.sampled_from(BROKERS))
    def controlled_shutdown(self, b: int) -> None:
        if self._registered(b) and not self.ctl.broker(b).fenced:
            heartbeat(self.ctl, b, want_shut_down=True)

    @rule(
        key=st.sampled_from(PARTITIONS),
        members=st.sets(st.sampled_from(BROKERS)),
        stale=st.booleans(),
        version=st.integers(0, 3),
    )
    def alter_isr(self, key, members: set[int], stale: bool, version: int) -> None:
        p = self.ctl.partition(*key)
        if p.leader == -1:
            return
        isr = [r for r in p.replicas if r in members or r == p.leader]
        epochs = {
            r: self.ctl.state.brokers[r].epoch - (1 if stale else 0)
            for r in isr
            if r in self.ctl.state.brokers
        }
        alter_partition(self.ctl, isr, version=version, epochs=epochs, topic=key[0], index=key[1])

    @rule(kind=st.sampled_from([ElectionType.PREFERRED, ElectionType.UNCLEAN]))
    def elect(self, kind: int) -> None:
        call(self.ctl, ApiKey.ELECT_LEADERS, 2, {"election_type": kind, "topic_partitions": None})

    @rule(value=st.integers(1, 4), topic=st.sampled_from(["t", "u", None]))
    def min_isr(self, value: int, topic) -> None:
        set_config(self.ctl, "min.insync.replicas", str(value), topic=topic)

    @rule(on=st.booleans())
    def unclean_config(self, on: bool) -> None:
        set_config(self.ctl, "unclean.leader.election.enable", "true" if on else "false")

    @rule(ms=st.integers(0, 12_000))
    def tick(self, ms: int) -> None:
        self.ctl.tick(self.ctl.now_ms + ms)

    @rule(data=st.data())
    def answer_log_info_requests(self, data) -> None:
        """Brokers answer the recovery manager's GetReplicaLogInfo (KIP preset) with random
        logs, sometimes from a stale broker epoch or leader epoch, sometimes with an error."""
        for broker_id, api_key, version, body in self.ctl.outbox():
            if broker_id not in self.ctl.state.brokers:
                continue
            infos = []
            for tp in body["topic_partitions"]:
                topic = self.ctl.state.topics.get(tp["topic_id"])
                parts = []
                for index in tp["partitions"]:
                    p = topic.partitions[index] if topic is not None else None
                    epoch = p.leader_epoch if p is not None else 0
                    parts.append(
                        {
                            "partition": index,
                            "last_written_leader_epoch": data.draw(st.integers(0, 5)),
                            "current_leader_epoch": epoch - data.draw(st.sampled_from([0, 0, 1])),
                            "log_end_offset": data.draw(st.integers(0, 100)),
                            "error_code": data.draw(st.sampled_from(LOG_INFO_ERRORS)),
                        }
                    )
                infos.append({"topic_id": tp["topic_id"], "partition_log_info": parts})
            epoch = self.ctl.broker(broker_id).epoch - data.draw(st.sampled_from([0, 0, 1]))
            answer = {"broker_epoch": epoch, "topic_partition_log_info_list": infos}
            self.ctl.deliver(
                broker_id,
                api_key,
                version,
                wire_response("GetReplicaLogInfoResponse", version, answer),
            )

    @invariant()
    def _rejoined(self) -> None:
        """Take out of `unclean` every replica an ISR held since the last check: one step may
        elect it (uncleanly) into an ISR and then fence it into the ELR, fairly."""
        names = {t.topic_id: t.name for t in self.ctl.state.topics.values()}
        for entry in self.ctl.log[self.isr_seen :]:
            if entry.name == "PartitionChangeRecord" and entry.record["isr"] is not None:
                key = (names.get(entry.record["topic_id"]), entry.record["partition_id"])
                if key in self.unclean:
                    self.unclean[key] -= set(entry.record["isr"])
        self.isr_seen = self.ctl.end_offset

    def partitions_are_consistent(self) -> None:
        if not hasattr(self, "ctl"):
            return
        self._rejoined()
        for key in PARTITIONS:
            p = self.ctl.partition(*key)
            assert not set(p.isr) & set(p.elr), p
            assert set(p.elr) <= set(p.replicas), p
            assert p.leader == -1 or p.leader in p.isr, p
            self.unclean[key] -= set(p.isr)
            assert not self.unclean[key] & set(p.elr), (p, self.unclean[key])
            old = self.epochs.get(key, (-1, -1))
            assert p.leader_epoch >= old[0] and p.partition_epoch >= old[1], p
            self.epochs[key] = (p.leader_epoch, p.partition_epoch)

    @invariant()
    def log_reencodes_and_replays_to_the_state(self) -> None:
        if not hasattr(self, "ctl"):
            return
        for entry in self.ctl.log[self.seen :]:
            name, version, record = decode_record(entry.data)
            assert encode_record(name, version, record) == entry.data, entry
            assert (name, version, record) == (entry.name, entry.version, entry.record), entry
            self.shadow.append_bytes(entry.data)
        self.seen = len(self.ctl.log)
        assert self.shadow.state.snapshot() == self.ctl.state.snapshot()


ControllerMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("KIPWIRE_EXAMPLES", "20")),
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_controller_invariants = ControllerMachine.TestCase


def test_an_unclean_restart_then_an_unclean_election_then_a_fence_leaves_it_eligible() -> None:
    """Found by 800 schedules: b2 restarts uncleanly (out of every ISR and ELR), is elected
    uncleanly into t-0's ISR when b1's session expires, and is fenced into the ELR in the same
    tick. The machine once looked at the ISR only between steps and called that a violation."""
    state = ControllerMachine()
    state.start(semantics=Semantics.KAFKA_3_9, elr=True)
    state.unclean_config(on=True)
    state.controlled_shutdown(b=2)
    state.restart(b=2, clean=False)
    state.heartbeat_or_unfence(b=2)
    state.controlled_shutdown(b=3)
    assert 2 in state.unclean[("t", 0)]
    state.partitions_are_consistent()
    state.tick(ms=9001)
    state.partitions_are_consistent()
    assert state.ctl.partition("t", 0).elr == [2]
    assert 2 not in state.unclean[("t", 0)]
