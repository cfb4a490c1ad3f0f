"""Property tests: random record lists round-trip, offsets can be reassigned, CRCs stay valid."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.util import calc_crc32c

from kipwire.codec.records import Compression, Record, assign_offsets, build_batch, iter_batches
from kipwire.codec.records.varint import encode_varint, read_varint

pytestmark = pytest.mark.usefixtures("records_path")

INT64 = st.integers(-(2**63), 2**63 - 1)
maybe_bytes = st.none() | st.binary(max_size=300)
headers = st.lists(st.tuples(st.text(max_size=20), maybe_bytes), max_size=4)
# Timestamps near each other, as in a real batch, but with a negative or large spread too.
records = st.lists(
    st.fixed_dictionaries(
        {
            "key": maybe_bytes,
            "value": maybe_bytes,
            "headers": headers,
            "timestamp": st.integers(0, 2**40),
        }
    ),
    min_size=1,
    max_size=40,
)
BOUNDED = settings(max_examples=60, deadline=2000)


@BOUNDED
@given(records, st.sampled_from(list(Compression)), st.integers(0, 2**62))
def test_v2_round_trip_through_every_codec(recs, codec, base_offset) -> None:
    data = build_batch(recs, compression=codec, base_offset=base_offset)
    (batch,) = iter_batches(data)
    assert batch.compression is codec
    assert batch.max_timestamp == max(r["timestamp"] for r in recs)
    assert batch.records == [
        Record(base_offset + i, r["timestamp"], r["key"], r["value"], r["headers"])
        for i, r in enumerate(recs)
    ]


@BOUNDED
@given(
    records.map(lambda rs: [dict(r, headers=[]) for r in rs]),
    st.sampled_from([c for c in Compression if c is not Compression.ZSTD]),
    st.sampled_from([0, 1]),
    st.integers(0, 2**62),
)
def test_legacy_round_trip_through_every_codec(recs, codec, magic, base_offset) -> None:
    data = build_batch(recs, compression=codec, magic=magic, base_offset=base_offset)
    (batch,) = iter_batches(data)
    assert (batch.magic, batch.compression) == (magic, codec)
    assert batch.records == [
        Record(base_offset + i, r["timestamp"] if magic else -1, r["key"], r["value"], [])
        for i, r in enumerate(recs)
    ]


@BOUNDED
@given(
    st.lists(records, min_size=1, max_size=4),
    st.sampled_from(list(Compression)),
    st.integers(0, 2**60),
    st.booleans(),
)
def test_assign_offsets_keeps_crcs_valid(batches, codec, base_offset, in_place) -> None:
    data = b"".join(build_batch(recs, compression=codec, base_offset=0) for recs in batches)
    buffer = bytearray(data) if in_place else data
    stamped = assign_offsets(buffer, base_offset, partition_leader_epoch=9)
    if in_place:
        assert stamped is buffer
    # Only base offsets and leader epochs changed: everything the CRC covers is untouched.
    assert len(stamped) == len(data)
    decoded = list(iter_batches(stamped))  # verifies every CRC-32C
    offsets = [r.offset for b in decoded for r in b.records]
    assert offsets == list(range(base_offset, base_offset + sum(map(len, batches))))
    for batch in decoded:
        assert batch.partition_leader_epoch == 9
        assert calc_crc32c(bytes(batch.raw[21:])) == batch.crc  # an independent CRC-32C


@BOUNDED
@given(
    st.lists(records.map(lambda rs: [dict(r, headers=[]) for r in rs]), min_size=1, max_size=3),
    st.sampled_from([c for c in Compression if c is not Compression.ZSTD]),
    st.sampled_from([0, 1]),
    st.integers(0, 2**60),
)
def test_assign_offsets_on_legacy_sets(batches, codec, magic, base_offset) -> None:
    data = b"".join(build_batch(r, compression=codec, magic=magic) for r in batches)
    stamped = assign_offsets(data, base_offset)
    offsets = [r.offset for b in iter_batches(stamped) for r in b.records]
    assert offsets == list(range(base_offset, base_offset + sum(map(len, batches))))


@settings(max_examples=300, deadline=None)
@given(INT64)
def test_varint_round_trip(value) -> None:
    encoded = encode_varint(value)
    assert read_varint(encoded, 0, 10) == (value, len(encoded))
    assert len(encoded) <= 10
