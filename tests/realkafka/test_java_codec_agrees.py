"""Kafka's own Java codec (the generated *Data classes of kafka-clients) reads the bodies kipwire
writes, and writes them back byte for byte.

Two judges: kafka-clients 4.1.2 through benchmarks/java_codec (built with Maven on first use) for
the codec benchmark's bodies, and kafka-clients 4.4.0, the codec's reference release (fetched once
per machine by kafka_dist), for every version of every request and response it knows, through
java/KafkaDataCheck.java. Without java or mvn, or when Maven Central cannot be reached, the tests
skip with the reason.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from kafka_dist import CLIENTS_VERSION, KafkaDist, KafkaUnavailable, ensure_kafka_clients

TESTS = Path(__file__).resolve().parents[1]
BENCHMARKS = TESTS.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS / "java_codec"))
sys.path.insert(0, str(BENCHMARKS))
sys.path.insert(0, str(TESTS / "codec"))

from codec_bench import CASES  # noqa: E402
from codec_strategies import values  # noqa: E402
from java_codec_peer import Body, JavaCodecUnavailable, JavaRun, run_java_codec  # noqa: E402

from kipwire import codec  # noqa: E402

CHECKER = Path(__file__).resolve().parent / "java" / "KafkaDataCheck.java"
EXAMPLES_PER_VERSION = 2  # drawn values, beside the all-defaults body


def _check(bodies: list[Body]) -> JavaRun:
    try:
        return run_java_codec(bodies, check_only=True)
    except JavaCodecUnavailable as e:
        pytest.skip(f"Kafka's Java codec unavailable: {e}")


def _bench_bodies() -> list[Body]:
    return [
        Body(c.message, c.version, codec.message(c.message, c.version).build(c.value))
        for c in CASES
    ]


def test_java_codec_round_trips_kipwire_bodies() -> None:
    bodies = _bench_bodies()
    run = _check(bodies)
    assert run.codec_jar == "kafka-clients-4.1.2.jar"
    assert [(r.message, r.version) for r in run.results] == [
        ("MetadataResponse", 12),
        ("FetchRequest", 15),
        ("ProduceRequest", 9),
        ("ApiVersionsRequest", 3),
    ]
    for body, result in zip(bodies, run.results, strict=True):
        assert result.error is None, f"{body.message} v{body.version}: {result.error}"
        assert result.identical, (
            f"{body.message} v{body.version}: Kafka re-encodes kipwire's {len(body.wire)} bytes "
            f"differently from byte {result.first_difference}"
        )
        assert result.encode_ops is None and result.decode_ops is None  # check only, untimed


def test_java_codec_check_catches_differences_and_bad_bodies() -> None:
    wire = codec.message("ApiVersionsRequest", 3).build(
        {"client_software_name": "kipwire-bench", "client_software_version": "0.1.0"}
    )
    assert wire[0] == len("kipwire-bench") + 1  # compact string: unsigned varint length + 1
    # the same length as a two-byte varint: Kafka reads it, but writes the one-byte form back
    padded = bytes([wire[0] | 0x80, 0]) + wire[1:]
    truncated = wire[:-3]
    run = _check(
        [
            Body("ApiVersionsRequest", 3, wire),
            Body("ApiVersionsRequest", 3, padded),
            Body("ApiVersionsRequest", 3, truncated),
        ]
    )
    exact, non_canonical, short = run.results
    assert exact.identical and exact.error is None
    assert not non_canonical.identical and non_canonical.error is None
    assert non_canonical.first_difference == 0
    assert not short.identical and short.error is not None


@cache
def _clients() -> KafkaDist:
    return ensure_kafka_clients()


def _run_checker(*args: str) -> str:
    try:
        dist = _clients()
    except KafkaUnavailable as e:
        pytest.skip(f"kafka-clients {CLIENTS_VERSION} unavailable: {e}")
    done = subprocess.run(
        [dist.java, "-cp", dist.classpath, str(CHECKER), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@cache
def _jar_apis() -> dict[int, tuple[str, int, int]]:
    """API key -> (name, oldest, newest version) as kafka-clients 4.4.0 knows them."""
    out = {}
    for line in _run_checker("list").splitlines():
        key, name, lo, hi = line.split()
        out[int(key)] = (name, int(lo), int(hi))
    return out


def test_kafka_clients_44_numbers_and_names_every_api_as_the_codec_does() -> None:
    jar = _jar_apis()
    assert jar[codec.ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE][0] == (
        "StreamsGroupTopologyDescriptionUpdate"
    )
    for key, (name, lo, hi) in jar.items():
        assert codec.APIS[key].name == name, key
        api = codec.APIS[key]
        # what Kafka shipped: the codec's range without its extension versions (ElectLeaders v3)
        shipped = api.versions[1] if api.extension is None else api.extension[0] - 1
        assert api.versions[0] <= lo and shipped == hi, f"{name}: {api}, kafka-clients {lo}-{hi}"
    # Beyond the jar's keys, the codec has its extensions and the ZooKeeper-era controller
    # requests Kafka 4.0 removed (kept to read old traffic).
    extensions = {k for k, api in codec.APIS.items() if api.extension == api.versions}
    zookeeper_era = {k for k, api in codec.APIS.items() if "zkBroker" in api.listeners} - set(jar)
    assert set(codec.APIS) - set(jar) == extensions | zookeeper_era
    assert {codec.APIS[k].name for k in zookeeper_era} == {
        "LeaderAndIsr",
        "StopReplica",
        "UpdateMetadata",
        "ControlledShutdown",
    }


def _drawn(message: str, version: int) -> list[bytes]:
    """Bodies of `message` at `version` from values hypothesis draws (seeded: the same each run)."""
    out: list[bytes] = []

    @settings(
        max_examples=EXAMPLES_PER_VERSION,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(value=values(message, version))
    def draw(value: dict) -> None:
        out.append(codec.message(message, version).build(value))

    draw()
    return out


def test_kafka_clients_44_reads_and_rewrites_every_request_and_response_version(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    bodies = []
    for key, (_name, lo, hi) in sorted(_jar_apis().items()):
        api = codec.APIS[key]
        for message in (api.request, api.response):
            for v in range(lo, hi + 1):
                bodies.append((message, v, codec.message(message, v).build({})))
                bodies += [(message, v, wire) for wire in _drawn(message, v)]
    path = tmp_path_factory.mktemp("java") / "bodies.bin"
    with path.open("wb") as f:
        for message, v, wire in bodies:
            name = message.encode()
            f.write(struct.pack(">H", len(name)) + name + struct.pack(">hi", v, len(wire)) + wire)
    lines = _run_checker("check", str(path)).splitlines()
    assert len(lines) == len(bodies)
    failures = [
        f"{line} ({wire.hex()})"
        for line, (_m, _v, wire) in zip(lines, bodies, strict=True)
        if not line.endswith(" ok")
    ]
    assert failures == [], f"{len(failures)} of {len(bodies)} bodies: " + "; ".join(failures[:5])
    assert len({(m, v) for m, v, _ in bodies}) > 600
