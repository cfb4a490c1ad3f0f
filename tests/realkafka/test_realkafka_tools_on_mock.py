"""Kafka's own command-line tools against the mock: `kafka-configs --add-config
num.partitions=4` on the cluster default works, is described back, and applies to the next
topic; a static config is refused with Kafka's message."""

from __future__ import annotations

import subprocess
import zipfile

from kafka_dist import KafkaDist

from kipwire.mockbroker import MockCluster

TOOL_TIMEOUT = 120


#: kafka-configs.sh's class: Kafka 4.4 moved it from core (Scala) to the tools module.
CONFIG_COMMANDS = ("org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand")


def _config_command(dist: KafkaDist) -> str:
    """The ConfigCommand class the fetched release has."""
    for jar in sorted(dist.libs.glob("kafka*.jar")):
        with zipfile.ZipFile(jar) as archive:
            names = set(archive.namelist())
        for main in CONFIG_COMMANDS:
            if main.replace(".", "/") + ".class" in names:
                return main
    raise AssertionError(f"no ConfigCommand in {dist.libs}")


def _kafka_configs(dist: KafkaDist, bootstrap: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [dist.java, "-cp", dist.classpath, _config_command(dist)]
        + ["--bootstrap-server", bootstrap, "--entity-type", "brokers", "--entity-default", *args],
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT,
        check=False,
    )


def test_kafka_configs_changes_the_cluster_default_num_partitions(kafka_dist: KafkaDist) -> None:
    with MockCluster(brokers=1) as cluster:
        bootstrap = cluster.bootstrap_servers
        done = _kafka_configs(kafka_dist, bootstrap, "--alter", "--add-config", "num.partitions=4")
        assert done.returncode == 0, done.stderr[-2000:]
        assert "Completed updating default config for brokers in the cluster" in done.stdout
        described = _kafka_configs(kafka_dist, bootstrap, "--describe")
        assert described.returncode == 0, described.stderr[-2000:]
        assert "num.partitions=4" in described.stdout
        cluster.create_topic("defaulted", partitions=-1)
        assert cluster.describe_partition("defaulted", 3)["leader"] == 1  # four partitions
        refused = _kafka_configs(kafka_dist, bootstrap, "--alter", "--add-config", "log.dirs=/x")
        assert refused.returncode != 0
        assert "Cannot update these configs dynamically: Set(log.dirs)" in refused.stderr
