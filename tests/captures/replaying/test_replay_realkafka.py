"""Replays across real Apache Kafka 4.4.0 (tests/realkafka's harness; skipped without Java).

- Kafka's own Java clients (the console producer and a console consumer in a group), captured
  with tcpdump against real Kafka, replayed against the mock: the same meaning, apart from API
  versions the mock does not serve (none once it serves Kafka 4.4.0's ranges), and the mock then
  holds the same lines.
- The confluent-kafka story recorded against the mock, replayed against real Kafka once its
  coordinators are loaded: the same meaning, and Kafka then holds the same records. (On a broker
  just started, the replay meets what any client meets there and the report says so: FindCoordinator
  COORDINATOR_NOT_AVAILABLE, InitProducerId and JoinGroup NOT_COORDINATOR or
  COORDINATOR_LOAD_IN_PROGRESS while `__consumer_offsets` and `__transaction_state` load; the
  replay retries those as a client does.)
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kipwire.captures import replay
from kipwire.captures.replaying.sender import UNSUPPORTED
from kipwire.codec import ApiKey
from kipwire.mockbroker import MockCluster

pytestmark = pytest.mark.realkafka
pytest.importorskip("confluent_kafka")

REALKAFKA = Path(__file__).resolve().parents[2] / "realkafka"
if str(REALKAFKA) not in sys.path:
    sys.path.insert(0, str(REALKAFKA))

import kafka_dist  # noqa: E402
import real_clients_kit  # noqa: E402
import replay_story_kit as kit  # noqa: E402
from kafka_harness import KafkaCluster, KafkaUnavailable, single  # noqa: E402

VERSION = "4.4.0"
#: versions Kafka 4.4.0's Java clients use that Kafka 4.1.2's ranges (the mock's before its 4.4
#: preset) lack: API key, the name the compare reports, the version
KAFKA_44_VERSIONS = (
    (ApiKey.API_VERSIONS, "ApiVersions", 5),
    (ApiKey.LIST_OFFSETS, "ListOffsets", 11),
)
LINES = 10
LINES_TOPIC = "lines"


def _dist() -> kafka_dist.KafkaDist:
    """Kafka 4.4.0's jars: the harness's own version once it is 4.4.0, else fetched before."""
    if kafka_dist.KAFKA_VERSION == VERSION:
        return kafka_dist.ensure_kafka()
    libs = kafka_dist.cache_root() / f"kafka-{VERSION}"
    if not (libs / f"kafka_2.13-{VERSION}.jar").is_file():
        raise KafkaUnavailable(f"Kafka {VERSION}'s broker jars are not in {libs}")
    return kafka_dist.KafkaDist(kafka_dist.find_java(), libs)


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """A single-node Kafka 4.4.0 (broker and controller), or a skip that says why not."""
    try:
        cluster = KafkaCluster.start(_dist(), tmp_path_factory.mktemp("kafka"), single())
    except KafkaUnavailable as exc:
        pytest.skip(f"real Kafka {VERSION} unavailable: {exc}")
    try:
        yield cluster
    finally:
        cluster.stop()


def _tool(kafka: KafkaCluster, log: Path, main: str, *args: str, lines: str = "") -> str:
    cmd = kafka._java(log, main, "--bootstrap-server", kafka.bootstrap(), *args)
    done = subprocess.run(cmd, input=lines, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-500:]
    return done.stdout


def _create(kafka: KafkaCluster, topic: str, partitions: int) -> None:
    kafka.run_tool(
        "org.apache.kafka.tools.TopicCommand",
        "--bootstrap-server",
        kafka.bootstrap(),
        "--create",
        "--topic",
        topic,
        "--partitions",
        str(partitions),
        "--replication-factor",
        "1",
    )


def _console_clients(kafka: KafkaCluster, work: Path, topic: str, group: str, lines: int) -> str:
    produced = "".join(f"{group}-line-{i}\n" for i in range(lines))
    _tool(
        kafka,
        work / "producer.log",
        "org.apache.kafka.tools.ConsoleProducer",
        "--topic",
        topic,
        lines=produced,
    )
    return _tool(
        kafka,
        work / "consumer.log",
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        "--topic",
        topic,
        "--from-beginning",
        "--max-messages",
        str(lines),
        "--group",
        group,
    )


def _warm_up(kafka: KafkaCluster, topic: str) -> None:
    """A transactional producer and a group consumer once, so the coordinators are loaded."""
    import confluent_kafka as ck

    _create(kafka, topic, 1)
    producer = ck.Producer({"bootstrap.servers": kafka.bootstrap(), "transactional.id": topic})
    producer.init_transactions(kit.TIMEOUT)
    producer.begin_transaction()
    producer.produce(topic, value=b"warm")
    producer.commit_transaction(kit.TIMEOUT)
    consumer = ck.Consumer({"bootstrap.servers": kafka.bootstrap(), "group.id": topic})
    deadline, loaded = time.monotonic() + kit.TIMEOUT, False
    try:  # OffsetFetch answers once the group coordinator has loaded __consumer_offsets
        for _ in range(100):
            try:
                consumer.committed([ck.TopicPartition(topic, 0)], timeout=kit.TIMEOUT)
            except ck.KafkaException:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.2)  # a client's retry backoff; the coordinator is loading
                continue
            loaded = True
            break
    finally:
        consumer.close()
    assert loaded, "the group coordinator did not load"


def _served(cluster: MockCluster) -> dict[int, tuple[int, int]]:
    from kipwire.client import Connection

    with Connection(cluster.bootstrap_servers.split(",")[0]) as conn:
        return dict(conn.negotiate_versions().ranges)


def test_java_console_clients_captured_on_kafka_replay_on_the_mock(
    kafka: KafkaCluster, tmp_path: Path
) -> None:
    _create(kafka, LINES_TOPIC, 1)
    _create(kafka, "warm-up", 1)
    # once first, so the coordinators have loaded: a cold broker's retriable errors
    # (COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS) are not the clients' story
    _console_clients(kafka, tmp_path, "warm-up", "warm-up", 1)
    port = int(kafka.bootstrap().rsplit(":", 1)[1])
    try:
        dump = real_clients_kit.Tcpdump(tmp_path / "java.pcap", [port]).start()
    except real_clients_kit.CaptureUnavailable as exc:
        pytest.skip(f"no tcpdump capture here: {exc}")
    try:
        read = _console_clients(kafka, tmp_path, LINES_TOPIC, "java-readers", LINES)
    finally:
        capture = dump.stop()
    assert read.count("java-readers-line-") == LINES
    with MockCluster(brokers=1) as target:
        target.create_topic(LINES_TOPIC, 1, 1)
        result = replay([capture], bootstrap=target.bootstrap_servers, out=tmp_path / "out")
        served = _served(target)
        on_target = kit.held(target.bootstrap_servers, [(LINES_TOPIC, 1)])
    lines = [value for _key, value, _headers in on_target[(LINES_TOPIC, 0)]]
    assert lines == [b"java-readers-line-%d" % i for i in range(LINES)]
    unserved = {row.reason for row in result.not_replayed}
    assert all(reason.startswith(UNSUPPORTED) for reason in unserved), unserved
    # a version the mock does not serve is a difference of the target, said as such
    newer = {name for key, name, used in KAFKA_44_VERSIONS if served.get(key, (0, -1))[1] < used}
    left = [d for d in result.semantic_differences if d.subject.split()[0] not in newer]
    assert left == [], [d.summary for d in left]
    assert result.connections >= 4 and result.requests_sent >= 15


def test_the_mock_story_replayed_on_kafka_is_acknowledged_there_too(
    kafka: KafkaCluster, story: tuple[Path, dict], tmp_path: Path
) -> None:
    capture, recorded = story
    _create(kafka, kit.TOPIC, 2)
    _warm_up(kafka, "warm-up-story")
    result = replay([capture], bootstrap=kafka.bootstrap(), out=tmp_path / "out")
    assert result.semantic_differences == [], [d.summary for d in result.semantic_differences]
    assert kit.held(kafka.bootstrap()) == recorded
    assert result.connections >= 5 and result.requests_per_second > 0
