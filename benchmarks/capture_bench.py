"""Decode rate of kipwire's capture engines against tshark, on a rotated capture.

Builds a rotated capture (several pcapng files, as tcpdump -C would; `--files 1` for one large
file) of 120,000 PDUs over 8 long-lived connections from frames encoded by the codec (Metadata
v8, Produce v8 with record batches, Fetch v11: the newest versions tshark 4.0 decodes, so both
sides do the same work), then times: the in-process engine (`--engine local`), the Spark job in
local[1] and local[2], and `tshark -T json` (full decode) and `tshark -T fields` (six header
fields) on the same files when tshark is installed. Every decoder's malformed count is printed
next to its rate: a rate is only comparable when both sides decoded the PDUs.

The two Spark sessions start once each and stay warm (start-up and the first jobs printed
apart: a warm-up capture decoded where read, then cut into packet ranges and shuffled, so both
paths are warm); `--runs` rounds then run the local engine, local[1], local[2] and `tshark -T
fields` one after another, so a load that comes and goes falls on all four (`tshark -T json`
runs once, after).
For each Spark decode: wall time, the CPU time of the whole job (driver, JVM and Python workers:
the session's process tree), every task's time from Spark's event log, and how busy the task
slots were. Printed side by side at the end: PDUs/s per task slot (by wall time and per
CPU-second), the local[2]/local[1] ratio, and Spark's overhead against the local engine. The
load average is printed with every run: on a loaded machine the wall-time ratio measures the
machine; CPU per PDU does not.

    python benchmarks/capture_bench.py [--pdus 120000] [--files 4] [--runs 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import shutil
import socket
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


def tree_cpu(pid: int) -> float:
    """CPU seconds of process `pid` and its live descendants (with their reaped children).

    Spark's work runs in a JVM and in Python workers forked under it: their CPU is what one
    decode costs, whatever other processes on the machine take.
    """
    stats: dict[int, tuple[int, float]] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended while we looked
        # after the command name: state, ppid, ..., utime stime cutime cstime (fields 14-17)
        stats[int(entry)] = (int(fields[1]), sum(int(x) for x in fields[11:15]) / tick)
    children: dict[int, list[int]] = {}
    for child, (parent, _) in stats.items():
        children.setdefault(parent, []).append(child)
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        total += stats.get(p, (0, 0.0))[1]
        todo.extend(children.get(p, []))
    return total


def task_times(event_dir: str, windows: list[tuple[float, float]]) -> list[list[float]]:
    """Per timed run (a wall-clock window), the seconds each of its tasks ran (event log)."""
    runs: list[list[float]] = [[] for _ in windows]
    # Spark 4 writes an application's log as a folder of rolled files (eventlog_v2_*/events_*)
    logs = [os.path.join(d, n) for d, _, names in os.walk(event_dir) for n in names]
    for path in (p for p in logs if os.path.basename(p).startswith(("events_", "local-"))):
        with open(path) as f:
            for line in f:
                if '"SparkListenerTaskEnd"' not in line:
                    continue
                info = json.loads(line)["Task Info"]
                start, end = info["Launch Time"] / 1000, info["Finish Time"] / 1000
                for i, (lo, hi) in enumerate(windows):
                    if lo <= start <= hi:
                        runs[i].append(end - start)
    return runs


def serve_spark(master: str, folder: str, warm: str, out: str, event_dir: str) -> None:
    """Child process: a warm session; one decode per "go" line on stdin, a JSON line back."""
    from kipwire.captures.engines.spark_job import run_decode, session

    me = os.getpid()
    t = time.perf_counter()
    conf = {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": event_dir,
        "spark.eventLog.compress": "false",
    }
    s = session(master, conf=conf)
    t1 = time.perf_counter()
    run_decode([warm], out + "-warm", spark=s)
    # and again cut into packet ranges: a rotated set within the split size is decoded where it
    # is read, so the first decode leaves the shuffle path (its workers, its JIT) cold
    run_decode([warm], out + "-warm", spark=s, split_bytes=4096)
    print(json.dumps({"startup_s": t1 - t, "warmup_s": time.perf_counter() - t1}), flush=True)
    windows = []
    results = []
    for line in sys.stdin:
        if line.strip() != "go":
            break
        c, t, w = tree_cpu(me), time.perf_counter(), time.time()
        r = run_decode([folder], out, spark=s)
        r.update(wall_s=time.perf_counter() - t, cpu_s=tree_cpu(me) - c, load=os.getloadavg()[0])
        windows.append((w, time.time()))
        results.append(r)
        print(json.dumps({"run": len(results)}), flush=True)
    s.stop()
    for r, tasks in zip(results, task_times(event_dir, windows), strict=True):
        r["tasks_s"] = tasks
    print("RESULT" + json.dumps(results, default=str), flush=True)


class SparkChild:
    """A `serve_spark` process for one master, driven a run at a time."""

    def __init__(self, master: str, folder: Path, warm: Path, out: Path) -> None:
        self.master = master
        self.events = tempfile.mkdtemp(prefix="capture-bench-events-")
        self.err = open(out.with_name(f"spark-{master[6]}.log"), "w")  # noqa: SIM115 (its stderr)
        cmd = [sys.executable, __file__, "--serve", master, str(folder), str(warm), str(out)]
        self.proc = subprocess.Popen(
            cmd + [self.events],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.err,
            text=True,
            env=dict(os.environ, PYSPARK_PYTHON=sys.executable),
        )
        self.started = self._line()

    def _line(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"spark {self.master} ended early (exit {self.proc.wait()})")
        return json.loads(line.removeprefix("RESULT"))

    def run(self) -> None:
        """One timed decode; returns when it is done."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        self._line()

    def finish(self) -> list[dict]:
        """Stop the session; every run's summary, wall, CPU and task times."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        runs = self._line()
        self.proc.wait(timeout=120)
        self.err.close()
        shutil.rmtree(self.events, ignore_errors=True)
        return runs


def run_clusters(folder: Path, warm: Path, tmp: Path, runs: int) -> list[tuple[str, dict]]:
    """The job on a standalone cluster (master, two one-core workers) and over Spark Connect.

    The daemons start from pyspark's own jars, as the tests start them (`spark_daemons`); each
    session decodes the warm-up capture first, then the benchmark capture `runs` times.
    """
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "captures"))
    from spark_daemons import start_connect_server, start_master, start_worker

    from kipwire.captures.engines.spark_job import connect_session, run_decode, session

    def timed(spark, label: str) -> dict:
        run_decode([str(warm)], tmp / f"out-{label}-warm", spark=spark)
        best: dict = {}
        for _ in range(runs):
            t = time.perf_counter()
            r = run_decode([str(folder)], tmp / f"out-{label}", spark=spark)
            # wall time only: the executors are the daemons' children, not this process's
            r["wall_s"] = time.perf_counter() - t
            if not best or r["wall_s"] < best["wall_s"]:
                best = r
        return best

    found = []
    logs = tmp / "daemons"
    logs.mkdir(exist_ok=True)
    master, url = start_master(logs)
    daemons = [master]
    try:
        daemons += [start_worker(logs, url, n) for n in (1, 2)]
        conf = {"spark.executor.memory": "512m", "spark.cores.max": "2"}
        spark = session(url, app="capture-bench-standalone", conf=conf)
        try:
            found.append(("standalone, 2 workers x 1 core", timed(spark, "standalone")))
        finally:
            spark.stop()
    finally:
        for d in reversed(daemons):
            d.stop()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = start_connect_server(logs, port, sys.executable)
    try:
        spark = connect_session(f"sc://127.0.0.1:{port}")
        try:
            found.append(("Connect, server local[2]", timed(spark, "connect")))
        finally:
            spark.stop()
    finally:
        server.stop()
    return found


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
    ap.add_argument("--pdus", type=int, default=120_000)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--keep", help="build the capture here and keep it")
    ap.add_argument(
        "--runs", type=int, default=3, help="timed Spark decodes per master; the best counts"
    )
    ap.add_argument(
        "--clusters",
        action="store_true",
        help="also a standalone cluster and a Spark Connect server (pyspark's jars; needs Java)",
    )
    ap.add_argument("--serve", nargs=5, help=argparse.SUPPRESS)  # a Spark child's own mode
    args = ap.parse_args()
    if args.serve:
        serve_spark(*args.serve)
        return 0
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
    masters = ("local[1]", "local[2]")
    children = {m: SparkChild(m, folder, tmp / "warm", tmp / f"out-{m[6]}") for m in masters}
    for m, child in children.items():
        st = child.started
        print(f"spark {m}: start-up {st['startup_s']:.1f} s + first jobs {st['warmup_s']:.1f} s")
    local_walls: list[float] = []
    local_cpus: list[float] = []
    fields: list[tuple[float, float, int]] = []  # tshark -T fields: wall, CPU, PDUs per round
    tshark = shutil.which("tshark") is not None
    r: dict = {}
    # interleaved rounds: a load that comes and goes falls on every decoder alike
    for n in range(args.runs):
        w, c, r = run_local_engine(folder, tmp / "out-local", 1)
        local_walls += w
        local_cpus += c
        for child in children.values():
            child.run()
        if tshark:
            fields.append(run_tshark(paths, "fields"))
            ratio = (r["pdus"] / local_cpus[-1]) / (fields[-1][2] / fields[-1][1])
            print(
                f"round {n + 1}: local engine {local_walls[-1]:.1f} s (CPU {local_cpus[-1]:.1f} s),"
                f" tshark -T fields {fields[-1][0]:.1f} s (CPU {fields[-1][1]:.1f} s): "
                f"{ratio:.2f}x per CPU-second, load average {os.getloadavg()[0]:.1f}"
            )
    spark_runs = {m: child.finish() for m, child in children.items()}
    malformed = r["by_status"].get("malformed", 0)
    print(
        f"local engine: decode {', '.join(f'{x:.1f}' for x in local_walls)} s "
        f"(CPU {', '.join(f'{x:.1f}' for x in local_cpus)} s), {r['pdus']:,} PDUs "
        f"({r['by_status'].get('ok', 0):,} ok), pairs {r['pairs']}"
    )
    best_local = min(range(args.runs), key=lambda i: local_walls[i])
    note = f"malformed {malformed}"
    results.append(
        ("local engine", local_walls[best_local], local_cpus[best_local], r["pdus"], note),
    )
    slot_rate: dict[str, tuple[float, float]] = {}
    for m, runs in spark_runs.items():
        slots = int(m[6])
        for x in runs:
            busy = sum(x["tasks_s"]) / (slots * x["wall_s"])
            print(
                f"spark {m}: decode {x['wall_s']:.1f} s, CPU {x['cpu_s']:.1f} s "
                f"(JVM and Python workers), {len(x['tasks_s'])} tasks, longest "
                f"{max(x['tasks_s'], default=0):.1f} s, slots busy {busy:.0%}, "
                f"{x['pdus']:,} PDUs ({x['by_status'].get('ok', 0):,} ok), pairs {x['pairs']}, "
                f"load average {x['load']:.1f}"
            )
        best = min(runs, key=lambda x: x["wall_s"])
        bad = best["by_status"].get("malformed", 0)
        results.append(
            (f"spark {m}", best["wall_s"], best["cpu_s"], best["pdus"], f"malformed {bad}")
        )
        slot_rate[m] = (best["pdus"] / best["wall_s"] / slots, best["pdus"] / best["cpu_s"])
    clusters = run_clusters(folder, tmp / "warm", tmp, args.runs) if args.clusters else []
    if tshark:
        version = subprocess.run(["tshark", "--version"], capture_output=True, text=True)
        bad = tshark_malformed(paths)
        print(f"{version.stdout.splitlines()[0]}: {bad} malformed packets")
        secs, cpu, n = run_tshark(paths, "json")
        results.append(("tshark -T json", secs, cpu, n, f"malformed {bad}"))
        secs, cpu, n = min(fields)  # the best round, as for the engines
        results.append(("tshark -T fields", secs, cpu, n, f"malformed {bad}"))
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
    print("\nper task slot (PDUs/s by wall time / slots; PDUs per CPU-second of the whole job):")
    for m, (by_wall, by_cpu) in slot_rate.items():
        print(f"  spark {m}: {by_wall:9,.0f} by wall, {by_cpu:9,.0f} by CPU")
    print(
        f"  local engine:   {rate['local engine']:9,.0f} by wall, "
        f"{cpu_rate['local engine']:9,.0f} by CPU"
    )
    ratios = [
        one["wall_s"] / two["wall_s"]
        for one, two in zip(spark_runs["local[1]"], spark_runs["local[2]"], strict=True)
    ]
    print(
        f"local[2] / local[1]: {rate['spark local[2]'] / rate['spark local[1]']:.2f}x "
        f"(best runs; round by round {', '.join(f'{x:.2f}' for x in ratios)}x)"
    )
    for label, x in clusters:
        slots = 2
        print(
            f"spark {label}: decode {x['wall_s']:.1f} s, {x['pdus'] / x['wall_s']:,.0f} PDUs/s, "
            f"{x['pdus'] / x['wall_s'] / slots:,.0f} per task slot "
            f"({x['pdus']:,} PDUs, {x['by_status'].get('ok', 0):,} ok)"
        )
    print(
        f"Spark overhead against the local engine: "
        f"{cpu_rate['local engine'] / slot_rate['local[1]'][1]:.2f}x the CPU per PDU, "
        f"local[1] {rate['local engine'] / rate['spark local[1]']:.2f}x the wall time"
    )
    for peer in ("tshark -T json", "tshark -T fields"):
        if peer not in rate:
            continue
        print(
            f"spark local[1] / {peer}: {rate['spark local[1]'] / rate[peer]:.2f}x (wall), "
            f"{cpu_rate['spark local[1]'] / cpu_rate[peer]:.2f}x (CPU time of the whole job)"
        )
        print(
            f"local engine / {peer}: {rate['local engine'] / rate[peer]:.2f}x (wall), "
            f"{cpu_rate['local engine'] / cpu_rate[peer]:.2f}x (CPU time)"
        )
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
