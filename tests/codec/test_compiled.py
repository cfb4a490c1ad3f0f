"""The compiled decoders against the Python parsers they are generated beside.

Each compiled decoder here is made with a fallback that refuses, so a frame the C code cannot read
shows up instead of being answered by the Python parser: on well-formed frames both must give the
same value (same types, same key order); on mutated frames the C code must refuse exactly the
frames the Python parser refuses, and return the same value for the rest.
"""

from __future__ import annotations

import os
import random
import shutil
import uuid
from typing import Any

import pytest
from codec_strategies import values, versions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memory_growth import blocks_left_by

from kipwire import codec
from kipwire.codec import DecodeError, _compiled
from kipwire.codec.messages import registry
from kipwire.codec.records import batch as records_batch

needs_compiled = pytest.mark.skipif(not codec.compiled, reason="the compiled codec is not built")
ALL = sorted(codec.MESSAGES)
# KIPWIRE_FUZZ_FRAMES=1000000 (make test-deep) for the long hunt.
EXAMPLES = int(os.environ.get("KIPWIRE_EXAMPLES", "2"))
# KIPWIRE_FUZZ_FRAMES mutated frames in all, over the 881 message versions and EXAMPLES examples.
FUZZ_FRAMES = int(os.environ.get("KIPWIRE_FUZZ_FRAMES", "20000"))
MUTATIONS = -(-FUZZ_FRAMES // (881 * EXAMPLES))
HUGE = [b"\x7f\xff\xff\xff", b"\xff\xff\xff\xfe", b"\x7f\xff", b"\xff\xff\xff\xff\x0f", b"\x80"]


class Refused(Exception):
    """The compiled decoder could not read the frame and asked the fallback."""


def _refuse(data: Any, offset: int) -> Any:
    raise Refused


def strict(name: str, version: int) -> Any:
    """The compiled decoder of a message version, with no Python parser behind it."""
    decoder = _compiled.decoder(name, version, _refuse)
    assert decoder is not None, f"{name} v{version} has no compiled decoder"
    return decoder


def python(name: str, version: int) -> Any:
    """The generated Python parser of a message version."""
    return registry.module(name).PARSE[version]


def shape(obj: Any) -> Any:
    """`obj` with every type and the key order made visible, for an exact comparison."""
    if isinstance(obj, dict):
        return (type(obj).__name__, [(k, shape(v)) for k, v in obj.items()])
    if isinstance(obj, list | tuple):
        return (type(obj).__name__, [shape(x) for x in obj])
    if isinstance(obj, float):
        return ("float", repr(obj))  # nan equals itself, -0.0 differs from 0.0
    return (type(obj).__name__, obj)


def outcome(parse: Any, data: Any) -> Any:
    """What parsing `data` from offset 0 gives: the value's shape and end, or the failure."""
    try:
        value, end = parse(data, 0)
    except (DecodeError, Refused):
        return "refused"
    return shape(value), end


def test_active_when_a_compiler_is_present() -> None:
    """`make test` fails when the C compiler is here but the compiled path is not in use."""
    if _compiled.PURE_PYTHON:
        assert not codec.compiled
        pytest.skip("KIPWIRE_PURE_PYTHON=1 forces the Python path")
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler: the pure-Python path is expected")
    assert codec.compiled, "a C compiler is present but the compiled codec is not built or stale"
    assert codec.message("MetadataResponse", 12).compiled
    assert records_batch.NATIVE is not None, "the compiled record loops are not built"


@needs_compiled
def test_every_message_version_has_a_decoder() -> None:
    for name in ALL:
        for version in versions(name):
            strict(name, version)


@needs_compiled
def test_switching_paths() -> None:
    m = codec.message("FetchRequest", 17)
    registry.use_compiled(False)
    try:
        assert not m.compiled
    finally:
        registry.use_compiled(True)
    assert m.compiled


def mutate(rng: random.Random, frame: bytes) -> bytes:
    """A frame with bytes flipped, a lying length written in, a byte added, or its end cut off."""
    out = bytearray(frame)
    choice = rng.randrange(4)
    if choice == 0 and out:
        for _ in range(rng.randint(1, 3)):
            out[rng.randrange(len(out))] = rng.randrange(256)
    elif choice == 1 and out:
        at = rng.randrange(len(out))
        huge = rng.choice(HUGE)
        out[at : at + len(huge)] = huge
    elif choice == 2:
        del out[rng.randrange(len(out) + 1) :]
    else:
        out.insert(rng.randrange(len(out) + 1), rng.randrange(256))
    return bytes(out)


@needs_compiled
@pytest.mark.parametrize("name", ALL)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_same_values(name: str, data: st.DataObject, seed: int) -> None:
    """Every version's well-formed frames decode to the same value on both paths; then mutated
    copies of them (KIPWIRE_FUZZ_FRAMES in all, spread over the versions): the C code refuses
    exactly what Python refuses and agrees on the rest, and never crashes the interpreter."""
    rng = random.Random(seed)
    for version in versions(name):
        frame = codec.message(name, version).build(data.draw(values(name, version)))
        reference, compiled = python(name, version), strict(name, version)
        expected = outcome(reference, frame)
        assert expected != "refused"
        assert outcome(compiled, frame) == expected, f"{name} v{version}"
        for kind in (bytearray, memoryview):
            # `bytes` fields are slices of the input, of its type, on both paths.
            assert outcome(compiled, kind(frame)) == outcome(reference, kind(frame))
        for _ in range(MUTATIONS):
            bad = mutate(rng, frame)
            assert outcome(compiled, bad) == outcome(reference, bad), (name, version, bad.hex())


@needs_compiled
def test_no_reference_leaks() -> None:
    """100,000 messages decoded (a fifth of them malformed, through the fallback): the number of
    live allocations stays flat, where one leaked object per decode would add 100,000."""
    m = codec.message("MetadataResponse", 12)
    partition = {"partition_index": 3, "replica_nodes": [1, 2, 3], "isr_nodes": [1, 2]}
    topic = {"name": "t", "topic_id": uuid.uuid4(), "partitions": [partition] * 10}
    brokers = [{"node_id": i, "host": f"broker-{i}", "port": 9092, "rack": "r"} for i in range(3)]
    good = m.build({"topics": [topic] * 5, "brokers": brokers, "cluster_id": "c"})
    bad = good[: len(good) // 2]

    def run(n: int) -> int:
        refused = 0
        for i in range(n):
            try:
                m.parse(good if i % 5 else bad)
            except DecodeError:
                refused += 1
        return refused

    run(1000)
    refused, grown = blocks_left_by(lambda: run(100_000))
    assert refused == 20_000
    assert grown < 1000, f"{grown} more blocks allocated after 100,000 decodes"
