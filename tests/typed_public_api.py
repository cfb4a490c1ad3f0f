"""The public names README.md and docs/ pin, used as a typed program would use them.

Never run: `tests/test_architecture.py` type-checks it with mypy (strict), so a change that
drops, renames or mistypes one of these names fails there. Keep it to names the docs use.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import trio

from kipwire import codec
from kipwire.captures import compare, decode_capture, write_report, write_tables
from kipwire.captures.pcap import PcapngWriter
from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker import CONTROLLER, ClusterError, MockCluster, Semantics, open_cluster


def codec_round_trip() -> int:
    """README's tooling quick start: a message codec, a request frame, a metadata record."""
    fetch = codec.message("FetchRequest", 15)
    body = fetch.build({"max_wait_ms": 500, "replica_state": {"replica_id": 2}})
    assert fetch.parse(body).replica_state.replica_id == 2
    frame: bytes = codec.encode_request(ApiKey.METADATA, 12, {"topics": None}, correlation_id=7)
    request: codec.Request = codec.decode_request(frame)
    record: bytes = codec.encode_record("PartitionChangeRecord", 2, {"leader": 1})
    name, version, change = codec.decode_record(record)
    assert (name, version, change.leader) == ("PartitionChangeRecord", 2, 1)
    code: ErrorCode = ErrorCode.NOT_ENOUGH_REPLICAS
    return request.correlation_id + int(code)


def sync_cluster(semantics: Semantics = Semantics.KAFKA_4_1) -> int:
    """The mock cluster cookbook's synchronous face."""
    with MockCluster(brokers=3, semantics=semantics, config={"min.insync.replicas": "2"}) as c:
        servers: str = c.bootstrap_servers
        c.create_topic("orders", partitions=1, replication_factor=3)
        leader: int = c.partition("orders", 0).leader

        def leaderless() -> bool:
            return bool(c.partition("orders", 0).leader == -1)

        c.partition_network(leader, CONTROLLER)
        c.heal()
        with contextlib.suppress(ClusterError):
            c.stop_broker(99)
        c.stop_broker(leader, clean=False)
        moved: bool = c.wait_until(lambda: not leaderless(), timeout=10)
        return len(servers) + int(moved)


async def trio_cluster() -> list[int]:
    """The cookbook's trio face."""
    async with open_cluster(brokers=2) as cluster:
        await cluster.create_topic("t", partitions=1, replication_factor=2)
        await cluster.wait_until(lambda: len(cluster.partition("t", 0).isr) == 2)
        isr: list[int] = cluster.partition("t", 0).isr
        return isr


def captures(folder: Path) -> str:
    """The capture pipeline's in-process calls: record, decode, write tables, compare, report."""
    with PcapngWriter(folder / "one.pcapng") as pcap:
        conn = pcap.conversation(("10.0.0.1", 50000), ("10.0.0.2", 9092), ts_ns=1)
        conn.client_sends(b"\0\0\0\0", ts_ns=2)
        conn.close(ts_ns=3)
    rows = decode_capture(folder / "one.pcapng")
    tables: Path = write_tables(rows, folder / "a")
    write_tables(decode_capture((folder / "one.pcapng").read_bytes()), folder / "b")
    report = compare(tables, folder / "b")
    written: dict[str, Path] = write_report(report, folder / "report")
    return written["html"].name


if __name__ == "__main__":
    trio.run(trio_cluster)
