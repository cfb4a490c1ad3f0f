"""Decode rate of kipwire's capture engines against tshark, on a rotated capture.

Builds a rotated capture (several pcapng files, as tcpdump -C would) of at least 50,000 PDUs from
frames encoded by the codec (Metadata v8, Produce v8 with record batches, Fetch v11: the newest
versions tshark 4.0 decodes, so both sides do the same work), then times: the in-process engine
(`--engine local`), the Spark job in local[1] and local[2] (Spark start-up and its first job
measured apart; the rate is the best of `--runs` decodes in the warm session, every run
printed), `tshark -T json` (full decode) and `tshark -T fields` (six header fields) on the same
files when tshark is installed. Every decoder's malformed count is printed next to its rate:
a rate is only comparable when both sides decoded the PDUs (tshark's `_ws.malformed` count is 0).

"Per core" compares decoders given one core each: the local engine and Spark local[1] run one
decode task at a time, tshark is single-threaded; a per-core ratio is the ratio of their PDUs
per second. Wall time is printed for all; CPU time too for the local engine (this process) and
tshark (its processes), which stays fair on a loaded machine. The load average is printed:
other processes skew wall times, local[2] most.

    python benchmarks/capture_bench.py [--pdus 50000] [--files 4] [--runs 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kipwire import codec
from kipwire.captures.pcap import PcapngWriter, scan_index
from kipwire.codec import ApiKey, ErrorCode
from kipwire.codec.records import build_batch

PORT = 9092
# The newest versions tshark 4.0 decodes (it marks Produce v9, Fetch v12 and Metadata v9+
# "Unsupported API version" and malformed): both sides then do the same work.
VERSIONS = {ApiKey.PRODUCE: 8, ApiKey.FETCH: 11, ApiKey.METADATA: 8}
APIS = tuple(VERSIONS)
_T0 = 1_700_000_000_000_000_000


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _exchange(n: int, client: str) -> tuple[bytes, bytes]:
    """One realistic request/response pair, cycling through Produce, Fetch and Metadata."""
    topic = f"orders-{n % 5}"
    api = APIS[n % len(APIS)]
    if api == ApiKey.PRODUCE:
        records = build_batch(
            [
                {"key": b"k%d" % (n + i), "value": b"v" * 100, "timestamp": 1_700_000_000_000 + i}
                for i in range(5)
            ]
        )
        req = codec.encode_request(
            api,
            VERSIONS[api],
            {
                "acks": -1,
                "timeout_ms": 30000,
                "topic_data": [
                    {"name": topic, "partition_data": [{"index": n % 3, "records": records}]}
                ],
            },
            correlation_id=n,
            client_id=client,
        )
        resp = codec.encode_response(
            api,
            VERSIONS[api],
            {
                "responses": [
                    {
                        "name": topic,
                        "partition_responses": [
                            {"index": n % 3, "error_code": ErrorCode.NONE, "base_offset": n}
                        ],
                    }
                ]
            },
            correlation_id=n,
        )
    elif api == ApiKey.FETCH:
        req = codec.encode_request(
            api,
            VERSIONS[api],
            {
                "replica_id": -1,
                "max_wait_ms": 500,
                "min_bytes": 1,
                "topics": [
                    {"topic": topic, "partitions": [{"partition": n % 3, "fetch_offset": n}]}
                ],
            },
            correlation_id=n,
            client_id=client,
        )
        records = build_batch(
            [
                {"key": None, "value": b"payload-%d" % i, "timestamp": 1_700_000_000_000}
                for i in range(3)
            ]
        )
        resp = codec.encode_response(
            api,
            VERSIONS[api],
            {
                "responses": [
                    {
                        "topic": topic,
                        "partitions": [
                            {"partition_index": n % 3, "high_watermark": n + 3, "records": records}
                        ],
                    }
                ]
            },
            correlation_id=n,
        )
    else:
        req = codec.encode_request(
            api,
            VERSIONS[api],
            {"topics": [{"name": topic}]},
            correlation_id=n,
            client_id=client,
        )
        resp = codec.encode_response(
            api,
            VERSIONS[api],
            {
                "brokers": [{"node_id": 1, "host": "127.0.0.1", "port": PORT}],
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {
                                "partition_index": 0,
                                "leader_id": 1,
                                "replica_nodes": [1],
                                "isr_nodes": [1],
                            }
                        ],
                    }
                ],
            },
            correlation_id=n,
        )
    return _frame(req), _frame(resp)


def build_capture(folder: Path, pdus: int, files: int, connections: int = 8) -> list[Path]:
    """Write a rotated capture of `pdus` PDUs over long-lived connections, cut into `files`."""
    buf = io.BytesIO()
    pairs = pdus // 2
    cache = [_exchange(n, f"client-{n % connections}") for n in range(min(pairs, 300))]
    t = _T0
    with PcapngWriter(buf) as w:
        convs = [
            w.conversation((f"10.1.0.{i + 2}", 50000 + i), ("10.1.0.1", PORT), t)
            for i in range(connections)
        ]
        for n in range(pairs):
            req, resp = cache[n % len(cache)]
            # fresh correlation ids per connection, so every response pairs with its request
            corr = struct.pack(">i", n)
            req = req[:8] + corr + req[12:]
            resp = resp[:4] + corr + resp[8:]
            t += 200_000
            conv = convs[n % connections]
            conv.client_sends(req, t)
            conv.server_sends(resp, t + 100_000)
        for conv in convs:
            conv.close(t + 1_000_000)
        data = buf.getvalue()
    offsets = list(scan_index(data).offsets)
    head = data[: offsets[0]]
    bounds = [0] + [offsets[len(offsets) * i // files] for i in range(1, files)] + [len(data)]
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(files):
        p = folder / ("cap.pcapng" if i == 0 else f"cap.pcapng{i}")
        p.write_bytes((head if i else b"") + data[bounds[i] : bounds[i + 1]])
        paths.append(p)
    return paths


def run_spark(folder: Path, warm: Path, master: str, out: Path, runs: int = 1) -> dict:
    """Time the job in a fresh process per master; start-up and warm-up reported apart.

    Start-up is the session; warm-up is the first job, on a tiny rotated capture (Spark plans
    its first Python data source, starts the Python workers and compiles its code then: seconds,
    once per session). The decode rate is then measured on the benchmark capture, `runs` times.
    """
    code = (
        "import json,sys,time;t=time.perf_counter();"
        "from kipwire.captures.engines.spark_job import run_decode, session;"
        f"s=session({master!r});t1=time.perf_counter();"
        f"run_decode([{str(warm)!r}], {str(out) + '-warm'!r}, spark=s);t2=time.perf_counter();"
        "times=[]\n"
        f"for i in range({runs}):\n"
        "    t3=time.perf_counter()\n"
        f"    r=run_decode([{str(folder)!r}], {str(out)!r}, spark=s)\n"
        "    times.append(time.perf_counter()-t3)\n"
        "r['startup_s']=t1-t;r['warmup_s']=t2-t1;r['decode_runs']=times;"
        "print('RESULT'+json.dumps(r,default=str))"
    )
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=3600,
        cwd=str(Path(__file__).resolve().parents[1]),
    )
    if proc.returncode:
        raise RuntimeError(proc.stderr[-3000:])
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT"))
    return json.loads(line[6:])


def run_tshark(paths: list[Path], mode: str) -> tuple[float, float, int]:
    """Wall and CPU seconds of tshark over every file, and the Kafka PDUs it reported."""
    base = ["tshark", "-n", "-d", f"tcp.port=={PORT},kafka", "-Y", "kafka"]
    if mode == "json":
        extra = ["-T", "json"]
    else:
        fields = [
            "frame.time_epoch",
            "tcp.stream",
            "kafka.request_key",
            "kafka.api_version",
            "kafka.correlation_id",
            "kafka.len",
        ]
        extra = ["-T", "fields", "-E", "occurrence=a"] + [a for f in fields for a in ("-e", f)]
    t, c = time.perf_counter(), _children_cpu()
    count = 0
    for p in paths:
        proc = subprocess.run(base + ["-r", str(p)] + extra, capture_output=True, timeout=3600)
        out = proc.stdout
        count += out.count(b'"kafka.correlation_id"') if mode == "json" else out.count(b"\n")
    return time.perf_counter() - t, _children_cpu() - c, count


def run_local_engine(folder: Path, out: Path, runs: int) -> tuple[list[float], list[float], dict]:
    """Wall and CPU seconds of each in-process decode of `folder`, and the last summary."""
    from kipwire.captures import run_local

    walls, cpus, summary = [], [], {}
    for _ in range(runs):
        t, c = time.perf_counter(), time.process_time()
        summary = run_local([str(folder)], out, capture="bench")
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return walls, cpus, summary


def _children_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def tshark_malformed(paths: list[Path]) -> int:
    """Packets tshark marks malformed in the files (not timed)."""
    count = 0
    for p in paths:
        proc = subprocess.run(
            ["tshark", "-n", "-d", f"tcp.port=={PORT},kafka", "-r", str(p), "-Y", "_ws.malformed"],
            capture_output=True,
            timeout=3600,
        )
        count += proc.stdout.count(b"\n")
    return count


def main() -> int:
    """Build the capture, run every decoder, print rates and ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pdus", type=int, default=50_000)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--keep", help="build the capture here and keep it")
    ap.add_argument(
        "--runs", type=int, default=3, help="timed Spark decodes per master; the best counts"
    )
    args = ap.parse_args()
    tmp = Path(args.keep or tempfile.mkdtemp(prefix="capture-bench-"))
    folder = tmp / "rotated"
    t = time.perf_counter()
    paths = build_capture(folder, args.pdus, args.files)
    build_capture(tmp / "warm", 400, 2)
    size = sum(p.stat().st_size for p in paths)
    print(
        f"capture: {len(paths)} files, {size / 1e6:.1f} MB, {args.pdus:,} PDUs "
        f"(built in {time.perf_counter() - t:.1f} s); {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    # (decoder, wall seconds, CPU seconds or None, PDUs, note)
    results: list[tuple[str, float, float | None, int, str]] = []
    walls, cpus, r = run_local_engine(folder, tmp / "out-local", args.runs)
    malformed = r["by_status"].get("malformed", 0)
    print(
        f"local engine: decode {', '.join(f'{x:.1f}' for x in walls)} s "
        f"(CPU {', '.join(f'{x:.1f}' for x in cpus)} s), {r['pdus']:,} PDUs "
        f"({r['by_status'].get('ok', 0):,} ok), pairs {r['pairs']}"
    )
    results.append(("local engine", min(walls), min(cpus), r["pdus"], f"malformed {malformed}"))
    for master in ("local[1]", "local[2]"):
        r = run_spark(folder, tmp / "warm", master, tmp / f"out-{master[6]}", args.runs)
        n = r["pdus"]
        ok = r["by_status"].get("ok", 0)
        runs = r["decode_runs"]
        print(
            f"spark {master}: start-up {r['startup_s']:.1f} s + first job {r['warmup_s']:.1f} s, "
            f"decode {', '.join(f'{x:.1f}' for x in runs)} s, {n:,} PDUs ({ok:,} ok), "
            f"pairs {r['pairs']}, load average {os.getloadavg()[0]:.1f}"
        )
        bad = r["by_status"].get("malformed", 0)
        results.append((f"spark {master}", min(runs), None, n, f"malformed {bad}"))
    if shutil.which("tshark"):
        version = subprocess.run(["tshark", "--version"], capture_output=True, text=True)
        bad = tshark_malformed(paths)
        print(f"{version.stdout.splitlines()[0]}: {bad} malformed packets")
        for mode in ("json", "fields"):
            secs, cpu, n = run_tshark(paths, mode)
            results.append((f"tshark -T {mode}", secs, cpu, n, f"malformed {bad}"))
    else:
        print("tshark not installed: skipping the tshark peers (apt-get install -y tshark)")
    head = f"{'decoder':<18} {'wall s':>7} {'CPU s':>7} {'PDUs':>8} {'PDUs/s':>9} {'MB/s':>7}"
    print(f"\n{head}  (rates by wall time)")
    for name, secs, cpu, n, note in results:
        cpu_s = f"{cpu:7.1f}" if cpu is not None else f"{'-':>7}"
        rate_s = f"{n / secs:9,.0f} {size / 1e6 / secs:7.2f}"
        print(f"{name:<18} {secs:7.1f} {cpu_s} {n:8,} {rate_s}  {note}")
    rate = {name: n / secs for name, secs, _, n, _ in results}
    cpu_rate = {name: n / cpu for name, _, cpu, n, _ in results if cpu}
    if "spark local[2]" in rate:
        print(f"\nlocal[2] / local[1]: {rate['spark local[2]'] / rate['spark local[1]']:.2f}x")
    for peer in ("tshark -T json", "tshark -T fields"):
        if peer not in rate:
            continue
        print(f"spark local[1] / {peer}: {rate['spark local[1]'] / rate[peer]:.2f}x (wall)")
        print(
            f"local engine / {peer}: {rate['local engine'] / rate[peer]:.2f}x (wall), "
            f"{cpu_rate['local engine'] / cpu_rate[peer]:.2f}x (CPU time)"
        )
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
