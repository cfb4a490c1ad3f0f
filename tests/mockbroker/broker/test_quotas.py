"""The broker's quota arithmetic: Kafka's windowed Rate, which entity's quota a request is
charged to (user+client-id > user > client-id, with defaults), and the throttle time earned."""

from __future__ import annotations

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker.broker.quotas import (
    ANONYMOUS,
    PRODUCE_RATE,
    ClientQuotas,
    Rate,
    quota_bound,
    sensor_tags,
    user_of,
)


def test_rate_divides_by_at_least_samples_minus_one_windows() -> None:
    rate = Rate(samples=11, window_ms=1000)
    rate.record(10_000, now_ms=0)
    # one sample: the window counts ten whole sample windows (10 s), not the 0 ms elapsed
    assert rate.window(0) == 10_000
    assert rate.measure(0) == 1_000
    rate.record(10_000, now_ms=12_500)
    # the first sample expired (older than 11 windows); 10 s again
    assert rate.measure(12_500) == 1_000


def test_rate_window_grows_past_the_minimum_with_whole_samples() -> None:
    rate = Rate(samples=3, window_ms=1000)
    for t in range(0, 2600, 100):
        rate.record(100, now_ms=t)
    assert rate.window(2500) == 2500
    assert abs(rate.measure(2500) - 2600 / 2.5) < 1e-6


Q = {
    (("client-id", "app"), ("user", "alice")): {PRODUCE_RATE: 1.0},
    (("client-id", None), ("user", "alice")): {PRODUCE_RATE: 2.0},
    (("user", "alice"),): {PRODUCE_RATE: 3.0},
    (("client-id", "app"), ("user", None)): {PRODUCE_RATE: 4.0},
    (("client-id", None), ("user", None)): {PRODUCE_RATE: 5.0},
    (("user", None),): {PRODUCE_RATE: 6.0},
    (("client-id", "app"),): {PRODUCE_RATE: 7.0},
    (("client-id", None),): {PRODUCE_RATE: 8.0},
}


def _limit(quotas: dict, user: str, client: str) -> float | None:
    return quota_bound(quotas, PRODUCE_RATE, *sensor_tags(quotas, PRODUCE_RATE, user, client))


def test_precedence_follows_kafkas_eight_levels() -> None:
    quotas = dict(Q)
    expected = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    for level, value in enumerate(expected):
        assert _limit(quotas, "alice", "app") == value, level
        del quotas[next(iter(quotas))]
    assert _limit(quotas, "alice", "app") is None


def test_a_default_client_id_quota_gives_each_client_id_its_own_sensor() -> None:
    quotas = {(("client-id", None),): {PRODUCE_RATE: 8.0}}
    assert sensor_tags(quotas, PRODUCE_RATE, ANONYMOUS, "a") == ("", "a")
    assert sensor_tags(quotas, PRODUCE_RATE, ANONYMOUS, "b") == ("", "b")
    users = {(("user", None),): {PRODUCE_RATE: 6.0}}
    assert sensor_tags(users, PRODUCE_RATE, "alice", "a") == ("alice", "")


def test_principal_names_the_user() -> None:
    assert user_of(None) == ANONYMOUS
    assert user_of("User:ANONYMOUS") == ANONYMOUS
    assert user_of("User:alice") == "alice"


def test_throttle_is_the_excess_over_the_quota_times_the_window() -> None:
    now = [0.0]
    quotas = ClientQuotas(
        lambda: {(("client-id", "p"),): {PRODUCE_RATE: 1000.0}},
        samples=11,
        window_seconds=1,
        clock=lambda: now[0],
    )
    # 10 KB in a 10 s window is the quota exactly: no throttle
    assert quotas.record(PRODUCE_RATE, ANONYMOUS, "p", 10_000, 0) == 0
    # 20 KB: twice the quota, one whole window over
    assert quotas.record(PRODUCE_RATE, ANONYMOUS, "p", 10_000, 0) == 10_000
    # another client id has no quota
    assert quotas.record(PRODUCE_RATE, ANONYMOUS, "q", 10**9, 0) == 0


def test_charge_sets_throttle_time_and_mutes_a_produce_over_quota() -> None:
    quotas = ClientQuotas(
        lambda: {(("client-id", None),): {PRODUCE_RATE: 100.0}},
        samples=2,
        window_seconds=1,
        clock=lambda: 0.0,
    )
    encoded: list[dict] = []

    def encode(body: dict) -> bytes:
        encoded.append(body)
        return b"x"

    data, mute = quotas.charge(None, "c", ApiKey.PRODUCE, 300, {"responses": []}, encode, 0.0)
    # 300 bytes over a 1 s window at 100 B/s: (300 - 100) / 100 * 1000 ms
    assert data == b"x" and mute == 2.0
    assert encoded[-1]["throttle_time_ms"] == 2000
    # acks=0: nothing to send, but the connection is muted all the same
    data, mute = quotas.charge(None, "c", ApiKey.PRODUCE, 300, None, encode, 0.0)
    assert data is None and mute > 2.0


def test_a_throttled_fetch_answers_no_data_and_is_not_charged() -> None:
    quotas = ClientQuotas(
        lambda: {(("client-id", None),): {"consumer_byte_rate": 10.0}},
        samples=2,
        window_seconds=1,
        clock=lambda: 0.0,
    )
    sent: list[dict] = []

    def encode(body: dict) -> bytes:
        sent.append(body)
        return b"y" * 100

    response = {"error_code": ErrorCode.NONE, "session_id": 0, "responses": [{"topic": "t"}]}
    _, mute = quotas.charge(None, "c", ApiKey.FETCH, 50, response, encode, 0.0)
    assert mute > 0 and sent[-1]["responses"] == [] and sent[-1]["throttle_time_ms"] > 0
    # the data it did not send is not counted: the same fetch is throttled the same way again
    _, again = quotas.charge(None, "c", ApiKey.FETCH, 50, response, encode, 0.0)
    assert again == mute


def test_request_percentage_throttle_is_capped_at_one_window() -> None:
    quotas = ClientQuotas(
        lambda: {(("client-id", None),): {"request_percentage": 0.001}},
        samples=11,
        window_seconds=1,
        clock=lambda: 0.0,
    )
    _, mute = quotas.charge(None, "c", ApiKey.METADATA, 10, {"topics": []}, lambda b: b"", 0.5)
    assert mute == 1.0
    # ApiVersions is never charged
    _, mute = quotas.charge(None, "c", ApiKey.API_VERSIONS, 10, {}, lambda b: b"", 0.5)
    assert mute == 0.0
