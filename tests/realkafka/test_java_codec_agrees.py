"""Kafka's own Java codec (kafka-clients 4.1.2's generated *Data classes) reads the bodies kipwire
writes for the codec benchmark, and writes them back byte for byte.

The Java side is benchmarks/java_codec (built with Maven on first use); without java or mvn, or
when the build cannot fetch kafka-clients, the tests skip with the reason.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS / "java_codec"))
sys.path.insert(0, str(BENCHMARKS))

from codec_bench import CASES  # noqa: E402
from java_codec_peer import Body, JavaCodecUnavailable, JavaRun, run_java_codec  # noqa: E402

from kipwire import codec  # noqa: E402


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
