"""The compiled encoders against the Python builders they are generated beside.

Each compiled encoder here is made with a fallback that refuses, so a value the C code does not take
shows up instead of being written by the Python builder: on well-formed values both must write the
same bytes; on values broken at one spot (a wrong type, a number out of range, a null, a key the
struct lacks) the C code must refuse whatever the Python builder refuses, and write the same bytes
for the rest. Through `codec.message(...).build` the two paths then give the same bytes and the
same EncodeErrors.
"""

from __future__ import annotations

import enum
import random
import uuid
from typing import Any

import pytest
from codec_strategies import expected, plain, values, versions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memory_growth import blocks_left_by
from test_compiled import ALL, EXAMPLES, Refused, needs_compiled

from kipwire import codec
from kipwire.codec import EncodeError, _compiled
from kipwire.codec.messages import registry

# Values broken at one spot, per value: KIPWIRE_FUZZ_FRAMES scales them as it does the frames.
BREAKS = 4


class Colour(enum.IntEnum):
    """An int subclass, as codec.ErrorCode is."""

    RED = 1


ODD_VALUES = [
    None, True, False, 0, -1, 1, 2**7, 2**15, 2**31, -(2**31) - 1, 2**63, -(2**63) - 1, 2**64,
    Colour.RED, 1.5, float("nan"), 0.0, "", "x", "x" * 40_000, "\ud800", b"", b"\x01" * 16,
    bytearray(b"\x02" * 16), memoryview(b"\x03" * 16), [], (), [1], [None], ["a"], {}, {"x": 1},
    uuid.UUID(int=7), object(),
]  # fmt: skip
ODD_TAGS = [{-1: b""}, {5: "text"}, {True: b""}, {0: b"", 1: b"x"}, {2**40: b""}, "tags", None]


def _refuse(*args: Any) -> Any:
    raise Refused


def strict(name: str, version: int, into: bool = False) -> Any:
    """The compiled encoder of a message version, with no Python builder behind it."""
    encoder = _compiled.encoder(name, version, _refuse, into=into)
    assert encoder is not None, f"{name} v{version} has no compiled encoder"
    return encoder


def python_build(name: str, version: int, value: Any) -> bytes:
    """What the Python builder writes for `value`."""
    return codec.message(name, version)._build_python(value)


def outcome(build: Any, value: Any) -> Any:
    """What building `value` gives: its bytes, or the error (refused, or the EncodeError's text)."""
    try:
        return build(value)
    except Refused:
        return "refused"
    except EncodeError as e:
        return ("EncodeError", e.path, e.reason)


def spots(value: Any, path: tuple = ()) -> list[tuple]:
    """Every place in a value (dict key, list index) one thing can be broken at."""
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += spots(v, (*path, k))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            out += spots(v, (*path, i))
    return out


def broken(rng: random.Random, value: dict) -> dict:
    """A deep copy of `value` with one thing changed: a value, an extra key, odd unknown tags."""
    copy = _copy(value)
    path = rng.choice(spots(copy))
    parent = _at(copy, path[:-1]) if path else None
    choice = rng.randrange(4)
    if not path or choice == 0:
        target = _at(copy, path)
        if isinstance(target, dict):
            key = rng.choice(["bogus", "_unknown_tags"])
            target[key] = rng.choice(ODD_TAGS) if key == "_unknown_tags" else 1
            return copy
        choice = 1
    if choice == 3 and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = rng.choice(ODD_VALUES)
    return copy


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_copy(v) for v in value]
    return value


def _at(value: Any, path: tuple) -> Any:
    for step in path:
        value = value[step]
    return value


@needs_compiled
def test_every_message_version_has_an_encoder() -> None:
    for name in ALL:
        for version in versions(name):
            strict(name, version)
            strict(name, version, into=True)
            assert type(codec.message(name, version).build).__name__ == "Encoder"


@needs_compiled
def test_switching_paths_switches_the_encoders() -> None:
    m = codec.message("MetadataResponse", 12)
    registry.use_compiled(False)
    try:
        assert "build" not in vars(m) and "build_into" not in vars(m)
    finally:
        registry.use_compiled(True)
    assert type(m.build).__name__ == type(m.build_into).__name__ == "Encoder"


@needs_compiled
@pytest.mark.parametrize("name", ALL)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_same_bytes(name: str, data: st.DataObject, seed: int) -> None:
    """Every version's values build to the same bytes on both paths (and those parse back to the
    value); then copies broken at one spot: the C code refuses what Python refuses and writes the
    same bytes for the rest, and `build` gives the Python path's bytes or EncodeError."""
    rng = random.Random(seed)
    for version in versions(name):
        value = data.draw(values(name, version))
        reference = python_build(name, version, value)
        assert strict(name, version)(value) == reference, f"{name} v{version}"
        out = bytearray(b"head")
        strict(name, version, into=True)(value, out)
        assert out == b"head" + reference
        parsed = codec.message(name, version).parse(reference)
        assert plain(parsed) == plain(expected(name, version, value))
        m = codec.message(name, version)
        for _ in range(BREAKS):
            bad = broken(rng, value)
            want = outcome(m._build_python, bad)
            got = outcome(strict(name, version), bad)
            if isinstance(want, tuple):
                assert got == "refused", (name, version, bad, want)
            else:
                assert got in ("refused", want), (name, version, bad)
            assert outcome(m.build, bad) == want


@needs_compiled
def test_errors_and_fallback_through_build() -> None:
    """What the C code does not take reaches the Python builder: same EncodeError, same bytes."""
    m = codec.message("FetchRequest", 15)
    with pytest.raises(EncodeError) as e:
        m.build({"MaxWaitMs": 500})
    assert e.value.reason == "unknown field 'MaxWaitMs' (did you mean 'max_wait_ms'?)"
    with pytest.raises(EncodeError) as e:
        m.build({"topics": [{"partitions": [{"partition": 2**40}]}]})
    assert e.value.path == "topics[0].partitions[0].partition"
    # A memoryview is Python's to write; an ignorable field a version lacks is Python's to drop.
    assert m.build({"rack_id": "r", "_unknown_tags": {9: memoryview(b"ab")}}) == m._build_python(
        {"rack_id": "r", "_unknown_tags": {9: b"ab"}}
    )
    v4 = codec.message("FetchRequest", 4)
    assert v4.build({"rack_id": "r1"}) == v4.build({})
    out = bytearray(b"x")
    m.build_into({"max_wait_ms": 1}, out)
    assert out == b"x" + m._build_python({"max_wait_ms": 1})
    with pytest.raises(EncodeError):
        m.build_into({"max_wait_ms": "soon"}, out)


@needs_compiled
def test_no_reference_leaks_on_build() -> None:
    """100,000 builds (a fifth of them refused, through the fallback's EncodeError), half of them
    into a bytearray: the number of live allocations stays flat."""
    m = codec.message("MetadataResponse", 12)
    partition = {"partition_index": 3, "replica_nodes": [1, 2, 3], "isr_nodes": [1, 2]}
    topic = {"name": "t", "topic_id": uuid.uuid4(), "partitions": [partition] * 10}
    brokers = [{"node_id": i, "host": f"broker-{i}", "port": 9092, "rack": "r"} for i in range(3)]
    good = {"topics": [topic] * 5, "brokers": brokers, "_unknown_tags": {7: b"x"}}
    bad = {**good, "controller_id": "one"}

    def run(n: int) -> int:
        refused = 0
        out = bytearray()
        for i in range(n):
            try:
                if i % 2:
                    m.build(good if i % 5 else bad)
                else:
                    del out[:]
                    m.build_into(good if i % 5 else bad, out)
            except EncodeError:
                refused += 1
        return refused

    run(1000)
    refused, grown = blocks_left_by(lambda: run(100_000))
    assert refused == 20_000
    assert grown < 1000, f"{grown} more blocks allocated after 100,000 builds"
