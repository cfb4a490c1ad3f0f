"""kafka-acls in the tool matrix: Kafka 4.4.0's AclCommand, configured by a client properties
file (SASL_SSL, PLAIN, the super user `User:admin`), adds, lists and removes ACLs on a secured
real Kafka 4.4.0 (StandardAuthorizer) and on a secured mock (`authorizer=True`); what it prints
is compared step by step after tool_matrix.py's masks.

Every step prints the same on both: no difference was found (so there is no expected-differences
table here, unlike test_tool_matrix.py). `--add` prints no "Current ACLs" listing in Kafka 4.4,
and a forced `--remove` prints nothing; the `--list` steps after them show their effect, polled
until real Kafka's authorizer has learned the change from the metadata log.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kafka_dist import KafkaDist, KafkaUnavailable
from kafka_harness import single
from secured_kafka import USERS, SecuredKafka, secured_mock
from tool_matrix import Side, mask

ACLS = "AclCommand"
#: (step, arguments after --bootstrap-server and --command-config)
ADDS = [
    (
        "add-topic-read",
        ["--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders"],
    ),
    (
        "add-group-read",
        ["--allow-principal", "User:alice", "--operation", "Read", "--group", "svc-g"],
    ),
    (
        "add-prefixed-write",
        ["--allow-principal", "User:bob", "--operation", "Write", "--topic", "svc-"]
        + ["--resource-pattern-type", "prefixed"],
    ),
    (
        "add-deny-describe",
        ["--deny-principal", "User:bob", "--operation", "Describe", "--topic", "secret-x"],
    ),
]
#: (step, --list arguments, how many ACL lines the list shows once every add has landed)
LISTS = [
    ("list-all", [], 4),
    ("list-topic", ["--topic", "orders"], 1),
    ("list-principal", ["--principal", "User:alice"], 2),
    ("list-match", ["--topic", "svc-orders", "--resource-pattern-type", "match"], 1),
]
#: ACL lines `--list` shows after the remove
AFTER_REMOVE = 3


def _java_config(path: Path, bootstrap: str, ca: str) -> Path:
    """The admin's PLAIN login over SASL_SSL, as a `--command-config` file."""
    module = "org.apache.kafka.common.security.plain.PlainLoginModule"
    path.write_text(
        f"bootstrap.servers={bootstrap}\nsecurity.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
        f'sasl.jaas.config={module} required username="admin" password="{USERS["admin"]}";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={ca}\n"
    )
    return path


def _blocks(text: str) -> str:
    """The tool's per-resource blocks sorted, and each block's ACL lines sorted: Kafka prints
    resources and their ACLs in hash-set order."""
    blocks = re.split(r"\n(?=\S)", text.strip())
    out = []
    for block in filter(None, blocks):
        head, *acls = block.splitlines()
        out.append("\n".join([head, *sorted(line.strip() for line in acls)]))
    return "\n".join(sorted(out))


class AclSide:
    """One secured cluster's AclCommand runs, through the tool matrix's tool server."""

    def __init__(self, side: Side, config: Path) -> None:
        self.side, self.config = side, config

    def run(self, *args: str) -> str:
        """AclCommand as the super user; its masked text."""
        common = ["--bootstrap-server", "{bs}", "--command-config", str(self.config)]
        return mask(self.side.tool(ACLS, *common, *args))

    def transcript(self) -> dict[str, str]:
        """Every step's normalised text, in order."""
        for name, args in ADDS:
            self.side.step(name, _blocks(self.run("--add", *args)))
        for name, args, count in LISTS:
            self.side.until(
                name,
                lambda args=args: _blocks(self.run("--list", *args)),
                lambda text, count=count: text.count("(principal=") == count,
            )
        # --force: without it the tool asks on System.console(), which a test run has not
        self.side.step("remove-topic-read", self.run("--remove", "--force", *ADDS[0][1]))
        self.side.until(
            "list-after-remove",
            lambda: _blocks(self.run("--list")),
            lambda text: text.count("(principal=") == AFTER_REMOVE,
        )
        return self.side.steps


@pytest.fixture(scope="module")
def real_steps(kafka_dist: KafkaDist, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The transcript on a one-node secured real Kafka 4.4.0."""
    workdir = tmp_path_factory.mktemp("acl-matrix-real")
    try:
        cluster = SecuredKafka.start(kafka_dist, workdir / "kafka", single())
    except KafkaUnavailable as e:
        pytest.skip(f"real Kafka did not start: {e}")
    side = Side("real", "", kafka_dist, workdir / "tools")
    try:
        side.bootstrap = cluster.sasl_bootstrap()
        config = _java_config(workdir / "client.properties", side.bootstrap, cluster.ca_path)
        return AclSide(side, config).transcript()
    finally:
        side.close()
        cluster.stop()


@pytest.fixture(scope="module")
def mock_steps(kafka_dist: KafkaDist, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The transcript on a one-broker mock secured as the real node is."""
    workdir = tmp_path_factory.mktemp("acl-matrix-mock")
    with secured_mock() as cluster:
        side = Side("mock", cluster.bootstrap_servers, kafka_dist, workdir / "tools")
        config = workdir / "client.properties"
        config.write_text(cluster.client_config("admin", "PLAIN", library="java"))
        try:
            return AclSide(side, config).transcript()
        finally:
            side.close()


STEPS = [n for n, _ in ADDS] + [n for n, _, _ in LISTS] + ["remove-topic-read"]
STEPS += ["list-after-remove"]


@pytest.mark.parametrize("step", STEPS)
def test_kafka_acls_prints_alike(real_steps, mock_steps, step):
    real, mock = real_steps[step], mock_steps[step]
    # a forced --remove prints nothing on success (list-after-remove shows its effect)
    assert real == "" if step == "remove-topic-read" else "(principal=" in real, real
    counts = {name: count for name, _, count in LISTS} | {"list-after-remove": AFTER_REMOVE}
    if step in counts:
        assert real.count("(principal=") == counts[step], real
    assert mock == real
