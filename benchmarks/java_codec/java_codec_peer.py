"""Kafka's own Java codec as a peer: build this folder's Maven project and run it on body files.

`run_java_codec(bodies)` writes each body to a file, runs `KafkaCodecBench` (the generated
`*Data` classes of kafka-clients) on them and returns what it found: whether each body decoded and
re-encoded byte-identically, and, unless `check_only`, encode and decode ops/s. The first call on a
machine builds the project with Maven (offline when the local repository already holds everything,
online otherwise) into `target/`; later calls reuse the build until pom.xml or the source changes.
Anything that keeps the peer from running (no java, no mvn, Maven Central unreachable, a failed
build) raises `JavaCodecUnavailable` with the reason; a run that goes wrong raises
`JavaCodecFailed`.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET = HERE / "target"
MAIN_CLASS = "kipwire.bench.KafkaCodecBench"
BUILD_TIMEOUT_S = float(os.environ.get("KIPWIRE_JAVA_CODEC_BUILD_TIMEOUT", "300"))
# the serial collector runs its pauses on no other thread than the one the bench clocks, and a
# fixed heap keeps the number of collections the same from run to run
JVM_OPTS = ["-XX:+UseSerialGC", "-Xms256m", "-Xmx256m"]


class JavaCodecUnavailable(Exception):
    """Kafka's Java codec cannot run here; the message says why."""


class JavaCodecFailed(Exception):
    """The Java codec ran but did not finish its work; the message says how."""


@dataclass(frozen=True)
class Body:
    """One message body to hand to the Java codec."""

    message: str  # schema name without Data, e.g. "MetadataResponse"
    version: int
    wire: bytes


@dataclass(frozen=True)
class JavaResult:
    """What the Java codec made of one body."""

    message: str
    version: int
    identical: bool  # decoded and re-encoded to the very same bytes
    first_difference: int | None  # offset of the first differing byte
    error: str | None  # the exception the decoder or encoder threw
    encode_ops: float | None
    decode_ops: float | None


@dataclass(frozen=True)
class JavaRun:
    """One run of the Java codec: the JVM and jar that ran, and a result per body."""

    java_version: str
    codec_jar: str
    results: list[JavaResult]


def _sources() -> list[Path]:
    return [HERE / "pom.xml", *sorted((HERE / "src").rglob("*.java"))]


def _stamp() -> Path:
    return TARGET / ".built"


def _is_built() -> bool:
    stamp = _stamp()
    if not stamp.exists() or not any((TARGET / "lib").glob("kafka-clients-*.jar")):
        return False
    return stamp.stat().st_mtime >= max(p.stat().st_mtime for p in _sources())


def _mvn(mvn: str, offline: bool) -> subprocess.CompletedProcess[str]:
    cmd = [mvn, "-q", "-B", "-Dstyle.color=never", "-f", str(HERE / "pom.xml")]
    cmd += ["-o"] if offline else []
    cmd += ["compile", "dependency:copy-dependencies"]
    try:
        return subprocess.run(
            cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise JavaCodecUnavailable(
            f"building {HERE.name} with Maven took over {BUILD_TIMEOUT_S:.0f} s"
        ) from None


def ensure_built() -> str:
    """The java binary to run the codec with, after building the project if it is stale."""
    java = shutil.which("java")
    if java is None:
        raise JavaCodecUnavailable("java is not installed (kafka-clients 4.1 needs Java 17+)")
    if _is_built():
        return java
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JavaCodecUnavailable("mvn is not installed (it builds benchmarks/java_codec)")
    TARGET.mkdir(exist_ok=True)
    # a test and a benchmark may build at once: one builds, the other waits and reuses it
    with open(TARGET / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _is_built():
            done = _mvn(mvn, offline=True)
            if done.returncode != 0:  # the first build fetches plugins and kafka-clients
                done = _mvn(mvn, offline=False)
            if done.returncode != 0:
                tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
                raise JavaCodecUnavailable(
                    f"mvn could not build {HERE.name} (exit {done.returncode}): " + " | ".join(tail)
                )
            _stamp().touch()
    return java


def run_java_codec(bodies: list[Body], budget: float = 1.2, check_only: bool = False) -> JavaRun:
    """Round-trip every body through Kafka's Java codec, then time it unless `check_only`."""
    java = ensure_built()
    classpath = os.pathsep.join([str(TARGET / "classes"), str(TARGET / "lib" / "*")])
    with tempfile.TemporaryDirectory(prefix="kipwire-java-codec-") as tmp:
        args = []
        for i, body in enumerate(bodies):
            path = Path(tmp) / f"{i}-{body.message}-v{body.version}.bin"
            path.write_bytes(body.wire)
            args += [body.message, str(body.version), str(path)]
        cmd = [java, *JVM_OPTS, "-cp", classpath, MAIN_CLASS]
        cmd += ["--check"] if check_only else ["--budget", str(budget)]
        # warm-up plus timing is 1.5 budgets per op, two ops per body
        timeout = 60 + (0 if check_only else 4 * budget * len(bodies))
        try:
            done = subprocess.run(
                cmd + args, capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired:
            raise JavaCodecFailed(f"{MAIN_CLASS} ran over {timeout:.0f} s") from None
    if done.returncode not in (0, 1):  # 1: a body did not round-trip, reported in the JSON
        raise JavaCodecFailed(
            f"{MAIN_CLASS} exited {done.returncode}: {done.stderr.strip()[-500:]}"
        )
    try:
        out = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise JavaCodecFailed(f"{MAIN_CLASS} printed no JSON: {done.stdout[-500:]!r}") from None
    return JavaRun(
        java_version=out["java"],
        codec_jar=out["codec_jar"],
        results=[
            JavaResult(
                message=c["message"],
                version=c["version"],
                identical=c["identical"],
                first_difference=c["first_difference"],
                error=c["error"],
                encode_ops=c["encode_ops"],
                decode_ops=c["decode_ops"],
            )
            for c in out["cases"]
        ],
    )
