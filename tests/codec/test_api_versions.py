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


def test_get_replica_log_info_is_an_extension_api_under_a_key_kafka_never_used() -> None:
    key = codec.ApiKey.GET_REPLICA_LOG_INFO
    assert key not in range(codec.ApiKey.UNREGISTER_CONTROLLER + 1)  # Kafka 4.4.0 stops at 94
    assert APIS[key].name == "GetReplicaLogInfo" and APIS[key].extension == APIS[key].versions
    assert key not in _by_key()
    assert _by_key(include_extensions=True)[key] == (0, 0)
    # Kafka 4.4.0's own numbering of the keys GetReplicaLogInfo's trunk draft once used.
    assert APIS[93].name == "StreamsGroupTopologyDescriptionUpdate"
    assert APIS[94].name == "UnregisterController"


def test_extensions_lists_every_extension_with_its_reason_and_is_read_only() -> None:
    marked = {k: api.extension for k, api in APIS.items() if api.extension is not None}
    assert {k: v[0] for k, v in codec.extensions.items()} == marked
    assert set(codec.extensions) == {codec.ApiKey.ELECT_LEADERS, codec.ApiKey.GET_REPLICA_LOG_INFO}
    for _versions, reason in codec.extensions.values():
        assert "KIP-966" in reason and "undocumented" not in reason
    with pytest.raises(TypeError):
        codec.extensions[0] = ((0, 0), "no")  # type: ignore[index]
    assert codec.is_extension(codec.ApiKey.ELECT_LEADERS, 3)
    assert not codec.is_extension(codec.ApiKey.ELECT_LEADERS, 2)
    assert codec.is_extension(codec.ApiKey.GET_REPLICA_LOG_INFO, 0)
    assert not codec.is_extension(codec.ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, 0)


def test_withdrawn_early_access_versions_decode_but_are_never_advertised() -> None:
    share = [
        codec.ApiKey.SHARE_GROUP_HEARTBEAT,
        codec.ApiKey.SHARE_GROUP_DESCRIBE,
        codec.ApiKey.SHARE_FETCH,
        codec.ApiKey.SHARE_ACKNOWLEDGE,
    ]
    assert {k for k, api in APIS.items() if api.withdrawn is not None} == set(share)
    everything = _by_key(include_unstable=True, include_extensions=True)
    for key in share:
        assert APIS[key].withdrawn == (0, 0) and APIS[key].versions[0] == 0
        assert everything[key][0] == 1
        request = APIS[key].request
        assert codec.message(request, 0).parse(codec.message(request, 0).build({})) is not None
