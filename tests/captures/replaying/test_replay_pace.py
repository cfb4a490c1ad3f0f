"""Pace and order against a mock: `original` keeps the captured gaps, `max` does not, and the
replay package imports only the stages above it and kipwire's codec and client."""

from __future__ import annotations

import ast
from pathlib import Path

import kipwire.captures as captures
from kipwire import codec
from kipwire.captures import replay
from kipwire.captures.pcap import PcapngWriter
from kipwire.codec import ApiKey
from kipwire.mockbroker import MockCluster

START = 1_795_000_000_000_000_000
GAP_NS = 400_000_000  # between the captured requests


def _capture(path: Path, requests: int) -> None:
    """One client asking Metadata `requests` times, GAP_NS apart."""
    with PcapngWriter(path) as pcap:
        conv = pcap.conversation(("10.0.0.1", 50000), ("10.0.0.2", 9092), ts_ns=START)
        for n in range(requests):
            t = START + n * GAP_NS
            request = codec.encode_request(
                ApiKey.METADATA, 12, {"topics": None}, correlation_id=n, client_id="paced"
            )
            answer = codec.encode_response(
                ApiKey.METADATA, 12, {"brokers": [], "topics": []}, correlation_id=n
            )
            conv.client_sends(len(request).to_bytes(4, "big") + request, ts_ns=t + 1)
            conv.server_sends(len(answer).to_bytes(4, "big") + answer, ts_ns=t + 2)
        conv.close(ts_ns=START + requests * GAP_NS)


def test_original_pace_keeps_the_captured_gaps_and_max_does_not(tmp_path: Path) -> None:
    _capture(tmp_path / "paced.pcapng", 3)
    with MockCluster(brokers=1) as target:
        slow = replay(
            [tmp_path / "paced.pcapng"],
            bootstrap=target.bootstrap_servers,
            out=tmp_path / "original",
            pace="original",
        )
        fast = replay(
            [tmp_path / "paced.pcapng"], bootstrap=target.bootstrap_servers, out=tmp_path / "max"
        )
    assert slow.requests_sent == fast.requests_sent == 3
    assert slow.seconds >= 2 * GAP_NS / 1e9  # the third request waited 0.8 s
    assert fast.seconds < slow.seconds
    assert slow.semantic_differences == fast.semantic_differences == []


def test_the_replay_stage_imports_only_the_stages_above_it() -> None:
    root = Path(captures.__file__).parent
    allowed = {"reading", "decoding", "engines", "comparing", "replaying", "pcap"}
    wrong = []
    for path in sorted((root / "replaying").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                head = (node.module or "").split(".")[0] if node.level == 2 else "replaying"
                if head not in allowed:
                    wrong.append(f"{path.name}: {node.module}")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kipwire."):
                package = node.module.split(".")[1]
                if package not in ("codec", "client", "captures"):
                    wrong.append(f"{path.name}: {node.module}")
    assert wrong == []
