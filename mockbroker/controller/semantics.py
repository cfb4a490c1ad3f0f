"""Which Kafka behaviour the controller imitates: one flag per difference, with named presets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal


@dataclass(frozen=True)
class Semantics:
    """Behaviour flags that differ between Kafka releases and the KIP texts (kip-rules table).

    `dataclasses.replace(Semantics.KAFKA_4_4, flag=...)` makes a variant. Whether ELR is on is
    not a flag: it is the feature `eligible.leader.replicas.version`, as in Kafka.
    """

    name: str = "custom"
    # The Kafka release whose wire surface the nodes present: its ApiVersions ranges, the
    # features they support and finalize, KIP-1242's ApiVersions v5 check ("4.1" or "4.4").
    release: Literal["4.1", "4.4"] = "4.4"
    # E.21 step 3: 4.1+ (KAFKA-19522) elects the last known leader only if it is acceptable.
    last_known_leader_must_be_live: bool = True
    # D.18: 4.0+ (KAFKA-18106) honours PreviousBrokerEpoch (request v3+) to tell a clean restart.
    clean_shutdown_detection: bool = True
    # D.19: 4.0+ writes ClearElrRecord on any min.insync.replicas change while ELR is on.
    clear_elr_on_min_isr_change: bool = True
    # D.16: shipped Kafka keeps the single last leader; the KIP text keeps former ELR members.
    last_known_elr: Literal["leader", "set"] = "leader"
    # E.26: the KIP's unclean recovery manager (GetReplicaLogInfo), which Kafka never merged.
    unclean_recovery: bool = False
    # G.31: KIP-704's leader answers NOT_LEADER_OR_FOLLOWER to fetches while RECOVERING.
    recovering_rejects_fetch: bool = False
    # ElectLeaders v3 with DesiredLeaders (the KIP's designation), a project extension.
    elect_leaders_designation: bool = False
    # I.34: 4.1+ counts ELR elections apart from unclean ones.
    elr_election_metric: bool = True

    KAFKA_3_9: ClassVar[Semantics]
    KAFKA_4_0: ClassVar[Semantics]
    KAFKA_4_1: ClassVar[Semantics]
    KAFKA_4_4: ClassVar[Semantics]
    KIP: ClassVar[Semantics]

    def __post_init__(self) -> None:
        if self.last_known_elr not in ("leader", "set"):
            raise ValueError(
                f"last_known_elr must be 'leader' or 'set', not {self.last_known_elr!r}"
            )
        if self.release not in RELEASES:
            raise ValueError(f"release must be one of {RELEASES}, not {self.release!r}")


#: The releases whose wire surface a preset can present.
RELEASES = ("4.1", "4.4")

Semantics.KAFKA_3_9 = Semantics(
    name="KAFKA_3_9",
    release="4.1",
    last_known_leader_must_be_live=False,
    clean_shutdown_detection=False,
    clear_elr_on_min_isr_change=False,
    elr_election_metric=False,
)
Semantics.KAFKA_4_0 = Semantics(
    name="KAFKA_4_0",
    release="4.1",
    last_known_leader_must_be_live=False,
    elr_election_metric=False,
)
Semantics.KAFKA_4_1 = Semantics(name="KAFKA_4_1", release="4.1")
# 4.2-4.4 changed no controller rule the flags cover (KIP-966's second part never shipped):
# what differs is the wire surface, the release.
Semantics.KAFKA_4_4 = Semantics(name="KAFKA_4_4")
Semantics.KIP = Semantics(
    name="KIP",
    last_known_elr="set",
    unclean_recovery=True,
    recovering_rejects_fetch=True,
    elect_leaders_designation=True,
)
