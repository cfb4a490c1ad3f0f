"""Liveness first: time the controller's event loop could not run (a stall) does not count
against a broker's heartbeat session; a broker that stays silent past it is still fenced."""

from __future__ import annotations

from controller_kit import heartbeat, replay_cluster


def test_a_stall_does_not_run_out_a_session_but_silence_after_it_does() -> None:
    ctl = replay_cluster(isr=[1, 2, 3])
    for b in (1, 2, 3):
        heartbeat(ctl, b)
    start, timeout = ctl.now_ms, ctl.session_timeout_ms
    ctl.stalled(3000)  # the loop was busy for 3 s: no heartbeat could have been heard
    assert ctl.tick(start + timeout + 1000) == []
    assert not any(ctl.broker(b).fenced for b in (1, 2, 3))
    heartbeat(ctl, 1)
    heartbeat(ctl, 2)
    fenced = ctl.tick(start + 3000 + timeout + 1)
    assert [e.name for e in fenced] == ["PartitionChangeRecord", "BrokerRegistrationChangeRecord"]
    assert ctl.broker(3).fenced and not ctl.broker(1).fenced
