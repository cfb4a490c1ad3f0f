"""The leader's ISR and high-watermark state machine on its own (kip-rules A.1-A.3, B.4-B.8)."""

from __future__ import annotations

import pytest

from kipwire.codec import ErrorCode
from kipwire.mockbroker.broker.isr import RECOVERED, RECOVERING, LeaderIsr, Outcome

LAG = 1000


def _state(isr=(1, 2, 3), replicas=(1, 2, 3), now=0, **kwargs) -> LeaderIsr:
    return LeaderIsr(1, 5, 10, list(replicas), list(isr), now_ms=now, lag_ms=LAG, **kwargs)


def everyone(broker_id: int, epoch: int) -> bool:
    return True


def _reply(state: LeaderIsr, isr, partition_epoch=None, leader_epoch=None, lrs=RECOVERED):
    return {
        "leader_epoch": state.leader_epoch if leader_epoch is None else leader_epoch,
        "partition_epoch": state.partition_epoch + 1
        if partition_epoch is None
        else partition_epoch,
        "isr": list(isr),
        "leader_recovery_state": lrs,
    }


def test_hwm_is_the_minimum_log_end_over_the_isr():
    s = _state()
    s.follower_fetched(2, 7, 100, now_ms=10, leader_end=10)
    s.follower_fetched(3, 4, 100, now_ms=10, leader_end=10)
    assert s.high_watermark(0, 10, 2, 10, everyone) == 4
    s.follower_fetched(3, 10, 100, now_ms=20, leader_end=10)
    assert s.high_watermark(4, 10, 2, 20, everyone) == 7


def test_hwm_never_moves_back():
    s = _state()
    s.follower_fetched(2, 3, 100, now_ms=10, leader_end=10)
    s.follower_fetched(3, 3, 100, now_ms=10, leader_end=10)
    assert s.high_watermark(6, 10, 2, 10, everyone) == 6


def test_hwm_frozen_while_the_committed_isr_is_below_min_isr():
    # A.1: the committed ISR counts, a pending expansion does not
    s = _state(isr=(1,))
    s.follower_fetched(2, 10, 100, now_ms=10, leader_end=10)
    proposal = s.expansion(0, 0, everyone)
    assert proposal is not None and proposal.isr == (1, 2)
    assert s.maximal_isr == (1, 2)
    assert s.high_watermark(0, 10, 2, 10, everyone) == 0
    assert s.alter_partition_reply(ErrorCode.NONE, _reply(s, (1, 2))) is Outcome.COMMITTED
    assert s.high_watermark(0, 10, 2, 10, everyone) == 10


def test_hwm_waits_for_a_caught_up_eligible_replica_outside_the_isr():
    # A.2: a non-ISR follower within the lag holds the HWM back; an ineligible one does not
    s = _state(isr=(1, 2))
    s.follower_fetched(2, 10, 100, now_ms=10, leader_end=10)
    s.follower_fetched(3, 6, 100, now_ms=10, leader_end=6)
    assert s.high_watermark(0, 10, 2, 10, everyone) == 6
    assert s.high_watermark(0, 10, 2, 10, lambda b, e: b != 3) == 10
    # once it has been behind for longer than the lag it no longer counts
    assert s.high_watermark(0, 10, 2, 10 + LAG + 1, everyone) == 10


def test_expansion_needs_the_hwm_the_epoch_start_and_eligibility():
    s = _state(isr=(1, 2))
    s.follower_fetched(3, 5, 77, now_ms=10, leader_end=9)
    assert s.expansion(6, 0, everyone) is None  # below the HWM
    assert s.expansion(5, 6, everyone) is None  # below the leader epoch's start
    assert s.expansion(5, 0, lambda b, e: False) is None  # B.5: not eligible
    proposal = s.expansion(5, 0, everyone)
    assert proposal.isr == (1, 2, 3)
    # B.7: each member's epoch from its fetches; the leader's own (-1 here) filled by the sender
    assert proposal.isr_with_epochs == ((1, -1), (2, -1), (3, 77))
    assert s.expansion(5, 0, everyone) is None  # one change in flight at a time


def test_shrink_is_pessimistic_and_drops_followers_past_the_lag():
    s = _state(now=0)
    s.follower_fetched(2, 10, 100, now_ms=500, leader_end=10)
    assert s.shrink(LAG, 10) is None
    proposal = s.shrink(LAG + 1, 10)
    assert proposal.isr == (1, 2)
    assert s.maximal_isr == (1, 2, 3)  # B.6: a pending shrink still counts the old ISR
    assert s.enough_replicas_after_append(3)


def test_min_isr_checks_before_and_after_the_append():
    s = _state(isr=(1, 2))
    assert s.enough_replicas_to_append(2)
    assert not s.enough_replicas_to_append(3)
    s.shrink(LAG + 1, 10)
    assert s.enough_replicas_after_append(2)  # the shrink is not committed yet
    s.alter_partition_reply(ErrorCode.NONE, _reply(s, (1,)))
    assert not s.enough_replicas_after_append(2)


@pytest.mark.parametrize("code", [ErrorCode.INELIGIBLE_REPLICA, ErrorCode.OPERATION_NOT_ATTEMPTED])
def test_ineligible_replica_reverts_and_does_not_retry(code):
    s = _state(isr=(1,))
    s.follower_fetched(2, 0, 100, now_ms=0, leader_end=0)
    s.expansion(0, 0, everyone)
    assert s.alter_partition_reply(code) is Outcome.REVERTED
    assert s.pending is None and s.isr == (1,) and s.maximal_isr == (1,)


@pytest.mark.parametrize(
    "code",
    [
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.INVALID_UPDATE_VERSION,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.NEW_LEADER_ELECTED,
    ],
)
def test_metadata_errors_keep_the_change_pending_until_new_metadata(code):
    s = _state(isr=(1,))
    s.follower_fetched(2, 0, 100, now_ms=0, leader_end=0)
    proposal = s.expansion(0, 0, everyone)
    assert s.alter_partition_reply(code) is Outcome.WAIT_FOR_METADATA
    assert s.pending is proposal
    s.metadata([1], 10, RECOVERED)  # same partition epoch: nothing new
    assert s.pending is proposal
    s.metadata([1, 3], 11, RECOVERED)
    assert s.pending is None and s.isr == (1, 3)


def test_other_errors_retry():
    s = _state(isr=(1,))
    s.follower_fetched(2, 0, 100, now_ms=0, leader_end=0)
    proposal = s.expansion(0, 0, everyone)
    assert s.alter_partition_reply(ErrorCode.REQUEST_TIMED_OUT) is Outcome.RETRY
    assert s.pending is proposal and not s.in_flight


def test_a_reply_for_another_epoch_is_ignored():
    s = _state(isr=(1,))
    s.follower_fetched(2, 0, 100, now_ms=0, leader_end=0)
    s.expansion(0, 0, everyone)
    stale = _reply(s, (1, 2), leader_epoch=4)
    assert s.alter_partition_reply(ErrorCode.NONE, stale) is Outcome.IGNORED
    older = _reply(s, (1, 2), partition_epoch=9)
    assert s.alter_partition_reply(ErrorCode.NONE, older) is Outcome.IGNORED
    assert s.isr == (1,)


def test_shipped_leader_marks_itself_recovered_at_once():
    # G.31: shipped Kafka serves at once; its next AlterPartition carries RECOVERED
    s = _state(isr=(1,), leader_recovery_state=RECOVERING)
    assert s.serves_fetches
    s.follower_fetched(2, 0, 100, now_ms=0, leader_end=0)
    assert s.expansion(0, 0, everyone).leader_recovery_state == RECOVERED


def test_kip_leader_refuses_fetches_until_recovered_is_committed():
    s = _state(isr=(1,), leader_recovery_state=RECOVERING, recovering_rejects_fetch=True)
    assert not s.serves_fetches
    proposal = s.recovered()
    assert proposal.isr == (1,) and proposal.leader_recovery_state == RECOVERED
    assert not s.serves_fetches  # still RECOVERING until the controller accepts it
    s.alter_partition_reply(ErrorCode.NONE, _reply(s, (1,), lrs=RECOVERED))
    assert s.serves_fetches and s.recovered() is None
