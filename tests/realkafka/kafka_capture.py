"""Recording a real cluster's loopback traffic with tcpdump, through tests/captures' own wrapper
(`real_clients_kit.Tcpdump`: ready on "listening on", flushed by a marker datagram, and an
`IncompleteCapture` when the kernel dropped packets), and the raw frames of what it recorded."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

CAPTURES_TESTS = Path(__file__).parents[1] / "captures"


def tcpdump_kit() -> ModuleType:
    """tests/captures/real_clients_kit.py, loaded by path (the tests folders are no package)."""
    name = "real_clients_kit"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, CAPTURES_TESTS / f"{name}.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {CAPTURES_TESTS / name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@dataclass
class Recording:
    """The pcap of a `record()` block, or why there is none."""

    path: Path | None = None
    missing: str = ""


@contextmanager
def record(path: Path, ports: list[int]) -> Iterator[Recording]:
    """tcpdump on `ports` for the block; a Recording without a path when it could not capture."""
    kit = tcpdump_kit()
    result = Recording()
    try:
        dump = kit.Tcpdump(path, ports).start()
    except kit.CaptureUnavailable as e:
        result.missing = str(e)
        yield result
        return
    try:
        yield result
    finally:
        try:
            result.path = dump.stop()
        except kit.IncompleteCapture as e:
            result.missing = f"tcpdump lost packets: {e}"
        except TimeoutError as e:
            result.missing = f"tcpdump did not flush: {e}"


def whole_connections(path: Path) -> Iterator[tuple[list[bytes], list[bytes]]]:
    """(request frames, response frames) of each connection captured whole: from its SYN on,
    both ways, without a gap. Connections open before tcpdump started are left out."""
    from kipwire.captures.decoding.pipeline import segments
    from kipwire.captures.pcap import PacketReader
    from kipwire.captures.reading.reassembly import TcpReassembler
    from kipwire.codec.framing import FrameBuffer

    reassembler = TcpReassembler()
    reassembler.add_many(segments(PacketReader(path)))
    for conn in reassembler.finish():
        streams = (conn.to_server, conn.to_client)
        if not all(s.syn and len(s.runs) <= 1 and s.missing == 0 for s in streams):
            continue
        frames = []
        for stream in streams:
            buffer = FrameBuffer()
            for run in stream.runs:
                buffer.feed(bytes(run.data))
            frames.append([bytes(f) for f in buffer.frames()])
        yield frames[0], frames[1]
