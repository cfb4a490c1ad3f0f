"""Record batch encode/decode throughput, kipwire against kafka-python, in the same run.

One batch of 10,000 records with 100-byte values (about 1 MiB), uncompressed and with each
codec. Each case runs both libraries alternately and keeps the best of several rounds, so a
busy machine slows both sides alike. Usage: ``python benchmarks/records_bench.py [--rounds N]``.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from kipwire.codec.records import Compression, build_batch, iter_batches

RECORDS = 10_000
VALUE_SIZE = 100
BASE_TIMESTAMP = 1_700_000_000_000


def make_records() -> list[dict]:
    """Text-like values (compressible, as real payloads tend to be), no keys, no headers."""
    rng = random.Random(42)
    words = [bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(6)) for _ in range(500)]
    records = []
    for i in range(RECORDS):
        value = b" ".join(rng.choice(words) for _ in range(20))[:VALUE_SIZE].ljust(VALUE_SIZE)
        timestamp = BASE_TIMESTAMP + i
        records.append({"key": None, "value": value, "headers": [], "timestamp": timestamp})
    return records


def kafka_python_build(records: list[dict], codec: Compression) -> bytes:
    """kafka-python's producer path: DefaultRecordBatchBuilder.append per record, then build."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec.value,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 30,
    )
    for offset, record in enumerate(records):
        builder.append(offset, record["timestamp"], record["key"], record["value"], [])
    return bytes(builder.build())


def kafka_python_read(data: bytes) -> int:
    """kafka-python's consumer path: MemoryRecords batches, every record's fields touched."""
    records = MemoryRecords(data)
    count = 0
    while records.has_next():
        for record in records.next_batch():
            record.value  # noqa: B018 - touch a field, as a consumer would
            count += 1
    return count


def kipwire_build(records: list[dict], codec: Compression) -> bytes:
    """kipwire's build_batch."""
    return build_batch(records, compression=codec)


def kipwire_read(data: bytes) -> int:
    """kipwire's iter_batches, every record decoded."""
    count = 0
    for batch in iter_batches(data):
        for record in batch.records:
            record.value  # noqa: B018 - same work as the kafka-python side
            count += 1
    return count


def best_of(rounds: int, ours: Callable[[], object], theirs: Callable[[], object]) -> tuple:
    """Alternate the two sides ``rounds`` times; return each side's best time in seconds."""
    best_ours = best_theirs = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        ours()
        best_ours = min(best_ours, time.perf_counter() - start)
        start = time.perf_counter()
        theirs()
        best_theirs = min(best_theirs, time.perf_counter() - start)
    return best_ours, best_theirs


def main() -> None:
    """Run every case and print records/s for both libraries and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    records = make_records()
    print(f"{RECORDS} records x {VALUE_SIZE} B values, best of {args.rounds} rounds, records/s")
    print(f"{'case':16} {'kipwire':>12} {'kafka-python':>13} {'ratio':>7}  batch bytes")
    for codec in Compression:
        ours_bytes = kipwire_build(records, codec)
        theirs_bytes = kafka_python_build(records, codec)
        # each side decodes the other's batch too, so the bytes are proven interchangeable
        assert kipwire_read(theirs_bytes) == RECORDS == kafka_python_read(ours_bytes)
        name = codec.name.lower()
        cases = [
            (
                f"encode {name}",
                lambda c=codec: kipwire_build(records, c),
                lambda c=codec: kafka_python_build(records, c),
            ),
            (
                f"decode {name}",
                lambda b=ours_bytes: kipwire_read(b),
                lambda b=theirs_bytes: kafka_python_read(b),
            ),
        ]
        for label, ours, theirs in cases:
            t_ours, t_theirs = best_of(args.rounds, ours, theirs)
            print(
                f"{label:16} {RECORDS / t_ours:12,.0f} {RECORDS / t_theirs:13,.0f} "
                f"{t_theirs / t_ours:6.2f}x  {len(ours_bytes):,} / {len(theirs_bytes):,}"
            )


if __name__ == "__main__":
    main()
