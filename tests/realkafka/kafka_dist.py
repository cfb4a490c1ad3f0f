"""Apache Kafka's jars from Maven Central, fetched once per machine into a cache folder.

`ensure_kafka(version)` returns the folder of jars (the classpath), fetching it with `mvn` the
first time: Kafka 4.4.0 by default, the codec's reference release, and 4.1.2 (`KAFKA_4_1`) for
the tests that keep the mock's `Semantics.KAFKA_4_1` preset true to it. `ensure_kafka_clients()`
does the same for kafka-clients alone (Kafka's own codec, the `*Data` classes, and the Java
producer and consumer), `ensure_kafka_streams()` for Kafka Streams. Two pytest processes may ask
at once: an exclusive file lock serialises them, and the folder appears
by an atomic rename only once every jar is in, so a half-fetched folder is never used. Anything
that keeps the jars from being had (no java, no mvn, Maven Central slow or refusing) raises
`KafkaUnavailable` with the reason, which the tests turn into a skip.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

# the codec's reference release: the harness runs it unless a test asks for another
KAFKA_VERSION = "4.4.0"
# the release the mock's Semantics.KAFKA_4_1 preset follows
KAFKA_4_1 = "4.1.2"
# kafka-clients of the codec's reference release: its generated *Data classes are Kafka's codec
CLIENTS_VERSION = KAFKA_VERSION
# log4j-api comes in at this version through each release's own dependencies; core and the
# slf4j 1.x binding (Kafka 4.1 and 4.4 use slf4j-api 1.7) must match it
LOG4J_VERSIONS = {KAFKA_VERSION: "2.25.5", KAFKA_4_1: "2.25.3"}
FETCH_TIMEOUT_S = float(os.environ.get("KIPWIRE_KAFKA_FETCH_TIMEOUT", "300"))
MIN_JAVA = 17


def artifacts(version: str = KAFKA_VERSION) -> list[tuple[str, str, str]]:
    """(group, artifact, version) of everything a KRaft node of Kafka `version` needs."""
    log4j = LOG4J_VERSIONS.get(version)
    if log4j is None:
        raise KafkaUnavailable(f"no log4j version known for Kafka {version}: add it here")
    kafka = ("kafka_2.13", "kafka-server", "kafka-metadata", "kafka-tools")
    return [("org.apache.kafka", a, version) for a in kafka] + [
        ("org.apache.logging.log4j", "log4j-core", log4j),
        ("org.apache.logging.log4j", "log4j-slf4j-impl", log4j),
    ]


class KafkaUnavailable(Exception):
    """Real Kafka cannot run here; the message says why."""


@dataclass(frozen=True)
class KafkaDist:
    """A fetched Kafka: the java binary, the folder of jars and the release they are."""

    java: str
    libs: Path
    version: str = KAFKA_VERSION

    @property
    def classpath(self) -> str:
        """The JVM classpath: every jar of the folder."""
        return str(self.libs / "*")

    def run_tool(self, main: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """Run one of Kafka's command-line tools by its main class, output captured."""
        command = [self.java, "-cp", self.classpath, main, *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)

    def tool_output(self, main: str, *args: str, timeout: float = 120) -> str:
        """A tool's stdout; a non-zero exit fails with the tail of its stderr."""
        run = self.run_tool(main, *args, timeout=timeout)
        assert run.returncode == 0, run.stderr[-3000:]
        return run.stdout


def cache_root() -> Path:
    """Where fetched Kafka versions live (KIPWIRE_CACHE overrides ~/.cache/kipwire)."""
    override = os.environ.get("KIPWIRE_CACHE")
    return Path(override) if override else Path.home() / ".cache" / "kipwire"


def java_major(java: str) -> int:
    """The major version of a java binary, from `java -version`."""
    try:
        out = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise KafkaUnavailable(f"{java} -version failed: {e}") from None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if m is None:
        raise KafkaUnavailable(f"cannot read a version from {java} -version: {out.stderr!r}")
    major = int(m.group(1))
    return int(m.group(2)) if major == 1 and m.group(2) else major


def find_java() -> str:
    """The java binary to run Kafka with: Java 17 or newer, or KafkaUnavailable."""
    java = shutil.which("java")
    if java is None:
        raise KafkaUnavailable("java is not installed (Kafka 4 needs Java 17 or newer)")
    major = java_major(java)
    if major < MIN_JAVA:
        raise KafkaUnavailable(f"{java} is Java {major}; Kafka 4 needs Java {MIN_JAVA}+")
    return java


def pom_xml(wanted: list[tuple[str, str, str]] | None = None) -> str:
    """A throwaway pom whose runtime dependencies are `wanted` (default: a Kafka 4.4.0 node)."""
    deps = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
        f"<version>{v}</version></dependency>"
        for g, a, v in (artifacts() if wanted is None else wanted)
    )
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kipwire</groupId><artifactId>realkafka</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{deps}
  </dependencies>
</project>
"""


def _fetch(mvn: str, target: Path, wanted: list[tuple[str, str, str]], jar: str) -> None:
    what = jar.removesuffix(".jar")
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        (work / "pom.xml").write_text(pom_xml(wanted))
        libs = work / "libs"
        cmd = [mvn, "-q", "-B", "-f", str(work / "pom.xml"), "dependency:copy-dependencies"]
        cmd += ["-DincludeScope=runtime", f"-DoutputDirectory={libs}"]
        try:
            done = subprocess.run(
                cmd, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S, check=False
            )
        except subprocess.TimeoutExpired:
            raise KafkaUnavailable(
                f"fetching {what} from Maven Central took over {FETCH_TIMEOUT_S:.0f} s"
            ) from None
        if done.returncode != 0:
            tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
            raise KafkaUnavailable(
                f"mvn could not fetch {what} (exit {done.returncode}): " + " | ".join(tail)
            )
        if not (libs / jar).exists():
            raise KafkaUnavailable(f"mvn finished but {jar} is missing")
        os.rename(libs, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def ensure_kafka(version: str = KAFKA_VERSION) -> KafkaDist:
    """Kafka `version`'s cached jars, fetched from Maven Central on first use; KafkaUnavailable
    if not."""
    folder = _ensure(f"kafka-{version}", artifacts(version), f"kafka_2.13-{version}.jar")
    return KafkaDist(find_java(), folder, version)


def ensure_kafka_clients(version: str = CLIENTS_VERSION) -> KafkaDist:
    """kafka-clients `version` and its runtime jars, cached like `ensure_kafka()`."""
    wanted = [("org.apache.kafka", "kafka-clients", version)]
    folder = _ensure(f"kafka-clients-{version}", wanted, f"kafka-clients-{version}.jar")
    return KafkaDist(find_java(), folder, version)


def ensure_kafka_streams(version: str = KAFKA_VERSION) -> KafkaDist:
    """kafka-streams `version` and the kafka-clients it runs on, cached like `ensure_kafka()`."""
    wanted = [("org.apache.kafka", "kafka-streams", version)]
    folder = _ensure(f"kafka-streams-{version}", wanted, f"kafka-streams-{version}.jar")
    return KafkaDist(find_java(), folder, version)


def _ensure(name: str, wanted: list[tuple[str, str, str]], jar: str) -> Path:
    """The cache folder `name`, fetched under its lock on first use."""
    root = cache_root()
    target = root / name
    if not target.is_dir():
        mvn = shutil.which("mvn")
        if mvn is None:
            raise KafkaUnavailable("mvn is not installed (it fetches Kafka from Maven Central)")
        root.mkdir(parents=True, exist_ok=True)
        with open(root / f".{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            # the process that held the lock before may have fetched it already
            if not target.is_dir():
                _fetch(mvn, target, wanted, jar)
    return target
