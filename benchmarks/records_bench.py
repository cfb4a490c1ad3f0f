"""Record batch encode/decode throughput, kipwire against kafka-python and aiokafka, in one run.

One batch of 10,000 records with 100-byte values (about 1 MiB), uncompressed and with each
codec. Each case runs the libraries alternately, garbage collector on, and reports the median
round (and the best) in process CPU time, so a busy machine slows every side alike. kipwire
decodes two ways: the `records` list a batch keeps ("decode") and iterating the batch ("stream",
records made as they are reached, as the peers' readers work). aiokafka is its Cython record
reader and builder (`aiokafka.record._crecords`), which the script checks is the one in use. With
the compiled codec built, kipwire reads and frames records in C (`codec/_compiled/records.c`);
``--python`` times its Python loops instead.

Usage: ``python benchmarks/records_bench.py [--rounds N] [--python]``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from collections.abc import Callable

from aiokafka.record import default_records as aiokafka_default
from aiokafka.record import memory_records as aiokafka_memory
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from kipwire import codec as kipwire_codec
from kipwire.codec.records import Compression, batch, build_batch, iter_batches

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


def _append_all(builder_class: type, records: list[dict], codec: Compression) -> bytes:
    """A peer's producer path: its DefaultRecordBatchBuilder, append per record, then build."""
    builder = builder_class(
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


def kafka_python_build(records: list[dict], codec: Compression) -> bytes:
    """kafka-python's producer path (pure Python)."""
    return _append_all(DefaultRecordBatchBuilder, records, codec)


def kafka_python_read(data: bytes) -> int:
    """kafka-python's consumer path: MemoryRecords batches, every record's fields touched."""
    records = MemoryRecords(data)
    count = 0
    while records.has_next():
        for record in records.next_batch():
            record.value  # noqa: B018 - touch a field, as a consumer would
            count += 1
    return count


def aiokafka_build(records: list[dict], codec: Compression) -> bytes:
    """aiokafka's producer path, its Cython builder."""
    return _append_all(aiokafka_default.DefaultRecordBatchBuilder, records, codec)


def aiokafka_read(data: bytes) -> int:
    """aiokafka's consumer path: MemoryRecords batches, CRC checked (its consumer's default
    check_crcs=True, as kipwire's iter_batches does), every record's fields touched."""
    records = aiokafka_memory.MemoryRecords(data)
    count = 0
    while records.has_next():
        next_batch = records.next_batch()
        if not next_batch.validate_crc():
            raise ValueError("aiokafka: CRC mismatch")
        for record in next_batch:
            record.value  # noqa: B018 - same work as the other sides
            count += 1
    return count


def kipwire_build(records: list[dict], codec: Compression) -> bytes:
    """kipwire's build_batch."""
    return build_batch(records, compression=codec)


def kipwire_read(data: bytes) -> int:
    """kipwire's iter_batches, every record decoded: `Batch.records`, the list it keeps."""
    count = 0
    for one in iter_batches(data):
        for record in one.records:
            record.value  # noqa: B018 - same work as the other sides
            count += 1
    return count


def kipwire_stream(data: bytes) -> int:
    """kipwire's iter_batches, iterating each batch: records made as they are reached and not
    kept, as the peers' readers work."""
    count = 0
    for one in iter_batches(data):
        for record in one:
            record.value  # noqa: B018 - same work as the other sides
            count += 1
    return count


def timed(rounds: int, sides: list[Callable[[], object]]) -> list[tuple[float, float]]:
    """Run the sides one after the other, ``rounds`` times, garbage collector on; return each
    side's (median, best) time in CPU seconds of the process (as codec_bench.py counts), so time
    the scheduler gives other jobs on a shared machine counts against no side."""
    times: list[list[float]] = [[] for _ in sides]
    for _ in range(rounds):
        for i, side in enumerate(sides):
            start = time.process_time()
            side()
            times[i].append(time.process_time() - start)
    return [(statistics.median(t), min(t)) for t in times]


# Targets (issue 23): kipwire at least this many times each peer's records/s, in every case.
TARGETS = {"kafka-python": 3.0, "aiokafka": 1.0}


def main() -> None:
    """Run every case and print records/s for the three libraries and kipwire's ratios."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--python", action="store_true", help="kipwire's Python record loops")
    args = parser.parse_args()
    batch.use_compiled(not args.python)
    if "_crecords" not in aiokafka_default.DefaultRecordBatchBuilder.__module__:
        raise SystemExit("aiokafka's Cython extensions are not in use: its Python path is timed")
    records = make_records()
    loops = "C" if batch._native is not None else "Python"
    print(
        f"{RECORDS} records x {VALUE_SIZE} B values, median (best) of {args.rounds} rounds,"
        f" records/s; kipwire's record loops in {loops} (codec.compiled={kipwire_codec.compiled});"
        f" load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'case':15} {'kipwire':>10} {'kafka-python':>12} {'aiokafka':>10} {'vs k-py':>7}"
        f" {'vs aiok':>7}  {'best: kipwire':>13} {'vs k-py':>7} {'vs aiok':>7}"
    )
    missed = []
    build = [kipwire_build, kafka_python_build, aiokafka_build]
    for codec in Compression:
        ours_bytes = kipwire_build(records, codec)
        kp_bytes = kafka_python_build(records, codec)
        aio_bytes = aiokafka_build(records, codec)
        # each side decodes another's batch too, so the bytes are proven interchangeable
        assert kipwire_read(kp_bytes) == kipwire_stream(aio_bytes) == RECORDS
        assert kafka_python_read(ours_bytes) == aiokafka_read(ours_bytes) == RECORDS
        name = codec.name.lower()
        cases = [
            (f"encode {name}", [lambda f=f, c=codec: f(records, c) for f in build]),
            (
                f"decode {name}",
                [
                    lambda b=ours_bytes: kipwire_read(b),
                    lambda b=kp_bytes: kafka_python_read(b),
                    lambda b=aio_bytes: aiokafka_read(b),
                ],
            ),
            (
                f"stream {name}",
                [
                    lambda b=ours_bytes: kipwire_stream(b),
                    lambda b=kp_bytes: kafka_python_read(b),
                    lambda b=aio_bytes: aiokafka_read(b),
                ],
            ),
        ]
        for label, sides in cases:
            (ours, ours_best), (kp, kp_best), (aio, aio_best) = timed(args.rounds, sides)
            ratios = {"kafka-python": kp / ours, "aiokafka": aio / ours}
            print(
                f"{label:15} {RECORDS / ours:10,.0f} {RECORDS / kp:12,.0f} {RECORDS / aio:10,.0f}"
                f" {ratios['kafka-python']:6.2f}x {ratios['aiokafka']:6.2f}x "
                f" {RECORDS / ours_best:13,.0f} {kp_best / ours_best:6.2f}x"
                f" {aio_best / ours_best:6.2f}x"
            )
            missed += [
                f"{label} vs {peer}: {ratio:.2f}x < {TARGETS[peer]}x"
                for peer, ratio in ratios.items()
                if ratio < TARGETS[peer]
            ]
    print(
        f"load average {os.getloadavg()[0]:.1f}; batch bytes (kipwire / kafka-python / aiokafka):"
    )
    for codec in Compression:
        sizes = [
            len(f(records, codec)) for f in (kipwire_build, kafka_python_build, aiokafka_build)
        ]
        print(f"  {codec.name.lower():7} " + " / ".join(f"{n:,}" for n in sizes))
    print("targets missed (medians): " + ("; ".join(missed) if missed else "none"))


if __name__ == "__main__":
    main()
