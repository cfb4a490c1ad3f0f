"""Apache Kafka's jars from Maven Central, fetched once per machine into a cache folder.

`ensure_kafka()` returns the folder of jars (the classpath), fetching it with `mvn` the first
time; `ensure_kafka_clients()` does the same for kafka-clients alone (Kafka's own codec, the
`*Data` classes), at a version of its own (4.4.0) while the broker harness stays on 4.1.2. Two
pytest processes may ask at once: an exclusive file lock serialises them, and the folder appears
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

KAFKA_VERSION = "4.1.2"
# kafka-clients of the codec's reference release: its generated *Data classes are Kafka's codec
CLIENTS_VERSION = "4.4.0"
# log4j-api comes in at this version through Kafka's own dependencies; core and the slf4j 1.x
# binding (Kafka 4.1 still uses slf4j-api 1.7) must match it
LOG4J_VERSION = "2.25.3"
FETCH_TIMEOUT_S = float(os.environ.get("KIPWIRE_KAFKA_FETCH_TIMEOUT", "300"))
MIN_JAVA = 17

_ARTIFACTS = [
    ("org.apache.kafka", "kafka_2.13", KAFKA_VERSION),
    ("org.apache.kafka", "kafka-server", KAFKA_VERSION),
    ("org.apache.kafka", "kafka-metadata", KAFKA_VERSION),
    ("org.apache.kafka", "kafka-tools", KAFKA_VERSION),
    ("org.apache.logging.log4j", "log4j-core", LOG4J_VERSION),
    ("org.apache.logging.log4j", "log4j-slf4j-impl", LOG4J_VERSION),
]


class KafkaUnavailable(Exception):
    """Real Kafka cannot run here; the message says why."""


@dataclass(frozen=True)
class KafkaDist:
    """A fetched Kafka: the java binary and the folder of jars."""

    java: str
    libs: Path

    @property
    def classpath(self) -> str:
        """The JVM classpath: every jar of the folder."""
        return str(self.libs / "*")


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
        raise KafkaUnavailable("java is not installed (Kafka 4.1 needs Java 17 or newer)")
    major = java_major(java)
    if major < MIN_JAVA:
        raise KafkaUnavailable(f"{java} is Java {major}; Kafka 4.1 needs Java {MIN_JAVA}+")
    return java


def pom_xml(artifacts: list[tuple[str, str, str]] | None = None) -> str:
    """A throwaway pom whose runtime dependencies are everything a KRaft node needs (or
    `artifacts`)."""
    deps = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
        f"<version>{v}</version></dependency>"
        for g, a, v in (_ARTIFACTS if artifacts is None else artifacts)
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


def _fetch(
    mvn: str,
    target: Path,
    artifacts: list[tuple[str, str, str]] | None = None,
    jar: str = f"kafka_2.13-{KAFKA_VERSION}.jar",
) -> None:
    what = jar.removesuffix(".jar")
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        (work / "pom.xml").write_text(pom_xml(artifacts))
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


def ensure_kafka() -> KafkaDist:
    """The cached Kafka jars, fetched from Maven Central on first use; KafkaUnavailable if not."""
    return KafkaDist(find_java(), _ensure(f"kafka-{KAFKA_VERSION}", None, None))


def ensure_kafka_clients(version: str = CLIENTS_VERSION) -> KafkaDist:
    """kafka-clients `version` and its runtime jars, cached like `ensure_kafka()`."""
    artifacts = [("org.apache.kafka", "kafka-clients", version)]
    folder = _ensure(f"kafka-clients-{version}", artifacts, f"kafka-clients-{version}.jar")
    return KafkaDist(find_java(), folder)


def _ensure(name: str, artifacts: list[tuple[str, str, str]] | None, jar: str | None) -> Path:
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
                if jar is None:
                    _fetch(mvn, target)
                else:
                    _fetch(mvn, target, artifacts, jar)
    return target
