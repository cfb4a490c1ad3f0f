"""codec.api_versions: the ApiVersions answer of a broker or controller, built from the index."""

from __future__ import annotations

import pytest

from kipwire import codec
from kipwire.codec.messages import APIS


def _by_key(listener: str = "broker", **flags: bool) -> dict[int, tuple[int, int]]:
    rows = codec.api_versions(listener, **flags)
    return {r["api_key"]: (r["min_version"], r["max_version"]) for r in rows}


def test_a_broker_advertises_its_apis_and_not_zookeeper_only_ones() -> None:
    broker = _by_key("broker")
    assert broker[codec.ApiKey.PRODUCE] == APIS[codec.ApiKey.PRODUCE].versions
    assert broker[codec.ApiKey.API_VERSIONS] == APIS[codec.ApiKey.API_VERSIONS].versions
    assert codec.ApiKey.LEADER_AND_ISR not in broker  # a ZooKeeper-era API
    assert codec.ApiKey.LEADER_AND_ISR in _by_key("zkBroker")
    assert list(broker) == sorted(broker)
    assert all(codec.ApiKey.PRODUCE in _by_key(x) for x in ("broker", "zkBroker"))


def test_a_controller_advertises_controller_apis_only() -> None:
    controller = _by_key("controller")
    assert codec.ApiKey.BROKER_REGISTRATION in controller
    assert codec.ApiKey.BROKER_HEARTBEAT in controller
    assert codec.ApiKey.PRODUCE not in controller
    assert set(controller) == {k for k, api in APIS.items() if "controller" in api.listeners}


def test_unstable_versions_are_held_back_unless_enabled() -> None:
    unstable = {k: api for k, api in APIS.items() if api.unstable and "broker" in api.listeners}
    assert unstable, "the schemas mark some broker API version unstable"
    stable, everything = _by_key(), _by_key(include_unstable=True)
    for key, api in unstable.items():
        lo, hi = api.versions
        assert everything[key] == (lo, hi)
        if lo == hi:  # no stable version at all: the API is not advertised
            assert key not in stable
        else:
            assert stable[key] == (lo, hi - 1)


def test_extension_versions_are_advertised_only_when_asked() -> None:
    elect = codec.ApiKey.ELECT_LEADERS
    assert APIS[elect].extension == (3, 3)
    assert _by_key()[elect] == (0, 2)  # as Apache Kafka shipped it
    assert _by_key(include_extensions=True)[elect] == (0, 3)


def test_an_unknown_listener_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown listener 'brokers'; one of broker, controller"):
        codec.api_versions("brokers")


def test_the_list_builds_an_api_versions_response_that_reads_back() -> None:
    keys = codec.api_versions()
    response = codec.message("ApiVersionsResponse", 3)
    data = response.build({"error_code": codec.ErrorCode.NONE, "api_keys": keys})
    decoded = response.parse(data)
    assert [dict(k) for k in decoded["api_keys"]] == keys
