"""Builders of small real-codec captures for the engine, input and CLI tests."""

from __future__ import annotations

import io
import struct
import uuid
from pathlib import Path

from kipwire import codec
from kipwire.captures.reading.pcap import PcapngWriter, scan_index
from kipwire.codec import ApiKey

T0 = 1_700_000_000_123_456_789  # ends in nanoseconds a microsecond clock would lose
TOPIC_ID = uuid.UUID("6b1f5a4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b")


def frame(payload: bytes) -> bytes:
    """Size-prefixed."""
    return struct.pack(">i", len(payload)) + payload


def metadata_pair(corr: int, topic: str, version: int = 12) -> tuple[bytes, bytes]:
    """A Metadata request and its response naming `topic` (with TOPIC_ID from v10)."""
    req = codec.encode_request(
        ApiKey.METADATA,
        version,
        {"topics": [{"name": topic}]},
        correlation_id=corr,
        client_id="kit",
    )
    body = {
        "brokers": [{"node_id": 1, "host": "127.0.0.1", "port": 9092}],
        "topics": [
            {
                "name": topic,
                "topic_id": TOPIC_ID,
                "partitions": [
                    {"partition_index": 0, "leader_id": 1, "replica_nodes": [1], "isr_nodes": [1]}
                ],
            }
        ],
    }
    return frame(req), frame(
        codec.encode_response(ApiKey.METADATA, version, body, correlation_id=corr)
    )


def fetch13_pair(corr: int) -> tuple[bytes, bytes]:
    """A Fetch v13 request and response: topics named by TOPIC_ID only."""
    req = codec.encode_request(
        ApiKey.FETCH,
        13,
        {
            "replica_id": -1,
            "max_wait_ms": 500,
            "min_bytes": 1,
            "topics": [{"topic_id": TOPIC_ID, "partitions": [{"partition": 0}]}],
        },
        correlation_id=corr,
        client_id="kit",
    )
    resp = codec.encode_response(
        ApiKey.FETCH,
        13,
        {"responses": [{"topic_id": TOPIC_ID, "partitions": [{"partition_index": 0}]}]},
        correlation_id=corr,
    )
    return frame(req), frame(resp)


def write_metadata_then_fetch(path: Path) -> None:
    """Metadata on one connection (the bootstrap), Fetch v13 on another (the leader)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with PcapngWriter(path) as w:
        boot = w.conversation(("10.0.0.2", 40001), ("10.0.0.9", 9092), T0)
        req, resp = metadata_pair(1, "orders")
        boot.client_sends(req, T0 + 1_000)
        boot.server_sends(resp, T0 + 2_001)
        boot.close(T0 + 3_000)
        lead = w.conversation(("10.0.0.2", 40002), ("10.0.0.8", 9092), T0 + 4_000)
        req, resp = fetch13_pair(2)
        lead.client_sends(req, T0 + 5_000)
        lead.server_sends(resp, T0 + 6_003)
        lead.close(T0 + 7_000)


def write_rotated(folder: Path, exchanges: int = 3) -> None:
    """One connection whose responses continue in the next rotated file (tcpdump -C)."""
    buf = io.BytesIO()
    t = T0
    with PcapngWriter(buf, mss=100) as w:
        conv = w.conversation(("10.0.0.3", 45000), ("10.0.0.9", 9093), t)
        for n in range(exchanges):
            req, resp = metadata_pair(100 + n, "rotated-topic-" + "y" * 150)
            conv.client_sends(req, t + n * 10_000_000)
            conv.server_sends(resp, t + n * 10_000_000 + 1_000_000)
        conv.close(t + 50_000_000)
        data = buf.getvalue()
    offsets = list(scan_index(data).offsets)
    head = data[: offsets[0]]
    cut = offsets[len(offsets) // 2]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cap.pcapng").write_bytes(data[:cut])
    (folder / "cap.pcapng1").write_bytes(head + data[cut:])


def write_tcpflow(folder: Path) -> None:
    """Both direction files of one connection, tcpflow-named; the broker on port 9092."""
    reqs, resps = zip(*(metadata_pair(n, f"flow-{n}") for n in (7, 8)), strict=True)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "010.000.000.001.50000-010.000.000.002.09092").write_bytes(b"".join(reqs))
    (folder / "010.000.000.002.09092-010.000.000.001.50000").write_bytes(b"".join(resps))


def write_frame_dumps(folder: Path) -> tuple[Path, Path]:
    """requests.bin and responses.bin of three Metadata exchanges."""
    reqs, resps = zip(*(metadata_pair(n, f"dump-{n}") for n in (21, 22, 23)), strict=True)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "requests.bin").write_bytes(b"".join(reqs))
    (folder / "responses.bin").write_bytes(b"".join(resps))
    return folder / "requests.bin", folder / "responses.bin"
