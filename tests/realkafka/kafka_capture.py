"""Recording a real cluster's loopback traffic with tcpdump, through tests/captures' own wrapper
(`real_clients_kit.Tcpdump`: ready on "listening on", flushed by a marker datagram, and an
`IncompleteCapture` when the kernel dropped packets), the raw frames of what it recorded, and
those frames decoded and encoded again with kipwire.codec; and tshark's reading of the requests."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
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


@dataclass
class Reencoded:
    """What `reencode` found: how many frames, and those that did not come back byte for byte."""

    frames: int = 0
    # (direction, api key, api version) of each frame the codec encodes differently
    differing: list[tuple[str, int, int]] = field(default_factory=list)
    # (api key, api version, client id, how many bytes) of requests with bytes after the body
    trailing: list[tuple[int, int, str | None, int]] = field(default_factory=list)


def reencode(path: Path) -> Reencoded:
    """Decode every frame of every whole connection of `path` and encode it again (DESIGN:
    decode -> encode is byte-identical)."""
    from kipwire.codec import decode_request, decode_response, encode_request, encode_response

    out = Reencoded()
    for requests, responses in whole_connections(path):
        asked = {}
        for frame in requests:
            r = decode_request(frame, trailing="ignore")
            asked[r.correlation_id] = (r.api_key, r.api_version)
            again = encode_request(
                r.api_key,
                r.api_version,
                r.body,
                correlation_id=r.correlation_id,
                client_id=r.client_id,
            )
            if again != frame[: len(frame) - r.trailing_bytes]:
                out.differing.append(("request", r.api_key, r.api_version))
            if r.trailing_bytes:
                out.trailing.append((r.api_key, r.api_version, r.client_id, r.trailing_bytes))
        for frame in responses:
            correlation = int.from_bytes(frame[:4], "big")
            api_key, api_version = asked[correlation]
            r = decode_response(frame, api_key, api_version)
            again = encode_response(api_key, r.api_version, r.body, correlation_id=correlation)
            if again != frame:
                out.differing.append(("response", api_key, api_version))
        out.frames += len(requests) + len(responses)
    return out


def tshark_requests(path: Path, ports: list[int]) -> Counter[tuple[int, int, int]] | None:
    """(api key, api version, correlation id) of every request tshark's Kafka dissector reads
    on `ports`, counted; None without tshark."""
    tshark = shutil.which("tshark")
    if tshark is None:
        return None
    fields = ("kafka.request_key", "kafka.api_version", "kafka.correlation_id")
    cmd = [tshark, "-r", str(path), "-T", "fields"]
    for p in ports:
        cmd += ["-d", f"tcp.port=={p},kafka"]
    for f in fields:
        cmd += ["-e", f]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"tshark exit {done.returncode}: {done.stderr[-500:]}")
    out: Counter[tuple[int, int, int]] = Counter()
    for line in done.stdout.splitlines():
        key, version, corr = (line.split("\t") + [""] * len(fields))[: len(fields)]
        if not key:
            continue  # a response (or no Kafka PDU in the packet)
        for k, v, c in zip(key.split(","), version.split(","), corr.split(","), strict=False):
            out[(int(k), int(v), int(c))] += 1
    return out
