"""The tools of the tool matrix (test_tool_matrix.py): one function per Kafka command-line tool,
running its subcommands against one `Side` and recording each step's text, normalised where
Kafka prints in hash order or places at random, so that real Kafka's and the mock's compare.

`TOOLS` is the matrix, in the order it runs (later tools see the topics and groups earlier ones
left, the same on both clusters); KIPWIRE_TOOL_MATRIX=full adds the perf tests and the
verifiable producer and consumer, which compare counts only.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable

from tool_matrix import (
    Side,
    mask,
    mask_columns,
    mask_fields,
    replica_sets,
    sorted_lines,
    sorted_table,
)

FULL = os.environ.get("KIPWIRE_TOOL_MATRIX") == "full"
#: records prepared on tm-data (test_tool_matrix._prepare)
RECORDS = 20
TOPICS = "TopicCommand"
CONFIGS = "ConfigCommand"
GROUPS = "consumer.group.ConsumerGroupCommand"
SHARE_GROUPS = "consumer.group.ShareGroupCommand"
STREAMS_GROUPS = "streams.StreamsGroupCommand"
BS = ("--bootstrap-server", "{bs}")

# ------------------------------------------------------------------ the tools


def _topic_configs(text: str) -> str:
    """kafka-topics --describe without the segment size the harness sets in server.properties
    (log.segment.bytes: a static broker config real Kafka lists among a topic's configs)."""
    return text.replace("segment.bytes=16777216,", "")


def kafka_topics(s: Side) -> None:
    create = ("--create", "--topic", "tm-topic", "--partitions", "3", "--replication-factor", "3")
    s.step("create", s.tool(TOPICS, *BS, *create, "--config", "retention.ms=100000"))
    describe = (TOPICS, *BS, "--describe", "--topic", "tm-topic")
    s.step("describe", _topic_configs(replica_sets(mask(s.tool(*describe)))))
    s.step("alter", s.tool(TOPICS, *BS, "--alter", "--topic", "tm-topic", "--partitions", "4"))
    altered = _topic_configs(replica_sets(mask(s.tool(*describe))))
    s.step("describe-altered", altered.splitlines()[0])
    s.step("delete", s.tool(TOPICS, *BS, "--delete", "--topic", "tm-topic"))
    s.until(
        "list",
        lambda: s.tool(TOPICS, *BS, "--list", "--exclude-internal"),
        lambda text: "tm-topic" not in text.split(),
    )
    s.step("describe-unknown", s.tool(*describe))


def kafka_configs(s: Side) -> None:
    topic = (CONFIGS, *BS, "--entity-type", "topics", "--entity-name", "tm-data")
    s.step("topic-describe", s.tool(*topic, "--describe"))
    add = "retention.ms=3600000,cleanup.policy=compact"
    s.step("topic-alter", s.tool(*topic, "--alter", "--add-config", add))
    s.step("topic-describe-altered", s.tool(*topic, "--describe"))
    s.step("topic-delete-config", s.tool(*topic, "--alter", "--delete-config", "cleanup.policy"))
    broker = (CONFIGS, *BS, "--entity-type", "brokers", "--entity-name", "1")
    s.step("broker-alter", s.tool(*broker, "--alter", "--add-config", "message.max.bytes=2000000"))
    s.step("broker-describe", s.tool(*broker, "--describe"))
    default = (CONFIGS, *BS, "--entity-type", "brokers", "--entity-default")
    s.step(
        "broker-default-alter",
        s.tool(*default, "--alter", "--add-config", "log.retention.ms=3600000"),
    )
    s.step("broker-default-describe", s.tool(*default, "--describe"))
    if s.controller is None:
        s.step("broker-default-describe-controller", "no controller listener")
    else:
        on_controller = ("--bootstrap-controller", "{ctrl}", "--entity-type", "brokers")
        s.step(
            "broker-default-describe-controller",
            s.tool(CONFIGS, *on_controller, "--entity-default", "--describe"),
        )
    static = s.tool(*broker, "--alter", "--add-config", "log.dirs=/elsewhere")
    s.step("broker-alter-static", static)
    group = (CONFIGS, *BS, "--entity-type", "groups", "--entity-name", "tm-share")
    earliest = ("--alter", "--add-config", "share.auto.offset.reset=earliest")
    s.step("group-alter", s.tool(*group, *earliest))
    s.step("group-describe", s.tool(*group, "--describe"))
    client = (CONFIGS, *BS, "--entity-type", "clients", "--entity-name", "tm-client")
    quota = "producer_byte_rate=1048576"
    s.step("clients-alter", s.tool(*client, "--alter", "--add-config", quota))
    s.step("clients-describe", s.tool(*client, "--describe"))


def kafka_features(s: Side) -> None:
    epochs = ("Epoch",)
    s.step("describe", mask_fields(_squeeze(s.tool("FeatureCommand", *BS, "describe")), *epochs))
    if s.controller is None:
        s.step("describe-controller", "no controller listener")
    else:
        on_controller = s.tool("FeatureCommand", "--bootstrap-controller", "{ctrl}", "describe")
        s.step("describe-controller", mask_fields(_squeeze(on_controller), *epochs))


def kafka_console_producer_and_consumer(s: Side) -> None:
    lines = "".join(f"key{i}:value {i}\n" for i in range(10))
    produce = ("--topic", "tm-console", "--reader-property", "parse.key=true")
    produce += ("--reader-property", "key.separator=:")
    s.step("produce", s.tool("ConsoleProducer", *BS, *produce, stdin=lines))
    consume = ("--topic", "tm-console", "--from-beginning", "--max-messages", "10")
    consume += ("--timeout-ms", "30000", "--formatter-property", "print.key=true")
    consume += (
        "--formatter-property",
        "print.offset=true",
        "--formatter-property",
        "print.partition=true",
    )
    s.step("consume", s.tool("consumer.ConsoleConsumer", *BS, *consume))


def kafka_consumer_groups(s: Side) -> None:
    every = ("--topic", "tm-data", "--from-beginning", "--max-messages", str(RECORDS))
    every += ("--timeout-ms", "30000", "--formatter-property", "print.key=true")
    console = "consumer.ConsoleConsumer"
    s.step("consume-classic", sorted_lines(s.tool(console, *BS, *every, "--group", "tm-classic")))
    kip848 = ("--group", "tm-848", "--consumer-property", "group.protocol=consumer")
    s.step("consume-consumer-protocol", sorted_lines(s.tool(console, *BS, *every, *kip848)))
    s.step("list", sorted_table(mask(s.tool(GROUPS, *BS, "--list", "--type", "--state"))))
    for group in ("tm-classic", "tm-848"):
        described = s.tool(GROUPS, *BS, "--describe", "--group", group)
        s.step(f"describe-{group}", _squeeze(described))
        state = s.tool(GROUPS, *BS, "--describe", "--group", group, "--state")
        s.step(f"describe-state-{group}", mask_columns(mask(state), {"(ID)"}))
    reset = ("--reset-offsets", "--group", "tm-classic", "--topic", "tm-data")
    s.step("reset-dry-run", _squeeze(s.tool(GROUPS, *BS, *reset, "--shift-by", "-3", "--dry-run")))
    s.step("reset-execute", _squeeze(s.tool(GROUPS, *BS, *reset, "--to-earliest", "--execute")))
    s.step("delete", s.tool(GROUPS, *BS, "--delete", "--group", "tm-classic", "--group", "tm-848"))
    s.step("describe-unknown", s.tool(GROUPS, *BS, "--describe", "--group", "tm-nosuch"))


def kafka_share_groups(s: Side) -> None:
    # kafka_configs set share.auto.offset.reset=earliest on the group already, long enough
    # before that every broker has it when the share partition starts; again here (the same
    # value) for a run of this tool alone
    group = (CONFIGS, *BS, "--entity-type", "groups", "--entity-name", "tm-share")
    s.step(
        "configure", s.tool(*group, "--alter", "--add-config", "share.auto.offset.reset=earliest")
    )
    consume = ("--topic", "tm-share", "--group", "tm-share", "--max-messages", "5")
    s.step(
        "consume",
        sorted_lines(
            s.tool("consumer.ConsoleShareConsumer", *BS, *consume, "--timeout-ms", "30000")
        ),
    )
    s.step("list", s.tool(SHARE_GROUPS, *BS, "--list", "--state"))
    s.step(
        "describe-offsets", _squeeze(s.tool(SHARE_GROUPS, *BS, "--describe", "--group", "tm-share"))
    )
    state = s.tool(SHARE_GROUPS, *BS, "--describe", "--group", "tm-share", "--state")
    epochs = {"GROUP-EPOCH", "ASSIGNMENT-EPOCH"}  # bumped as metadata refreshes come, or not
    s.step("describe-state", mask_columns(mask(state), {"(ID)"} | epochs))
    s.step("delete", s.tool(SHARE_GROUPS, *BS, "--delete", "--group", "tm-share"))


def kafka_transactions(s: Side) -> None:
    ids = {"Coordinator", "ProducerId", "LastTimestamp", "CurrentTransactionStartTimeMs"}
    ids |= {"TransactionDurationMs"}
    listed = s.tool("TransactionsCommand", *BS, "list")
    s.step("list", mask_columns(listed, ids, sep="\t"))
    described = s.tool("TransactionsCommand", *BS, "describe", "--transactional-id", "tm-txn")
    s.step(
        "describe",
        mask_columns(mask(described), ids | {"ProducerEpoch", "CoordinatorId"}, sep="\t"),
    )
    on_partition = ("describe-producers", "--topic", "tm-tx", "--partition", "0")
    s.step(
        "describe-producers",
        mask_columns(s.tool("TransactionsCommand", *BS, *on_partition), ids, sep="\t"),
    )
    idempotent = ("describe-producers", "--topic", "tm-del", "--partition", "0")
    s.step(
        "describe-producers-idempotent",
        mask_columns(s.tool("TransactionsCommand", *BS, *idempotent), ids, sep="\t"),
    )


def kafka_metadata_quorum(s: Side) -> None:
    moving = ("HighWatermark", "MaxFollowerLagTimeMs", "MaxFollowerLag")
    status = s.tool("MetadataQuorumCommand", *BS, "describe", "--status")
    s.step("describe-status", _observers_sorted(mask_fields(mask(status), *moving)))
    replication = s.tool("MetadataQuorumCommand", *BS, "describe", "--replication")
    columns = {"LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp"}
    s.step("describe-replication", mask_columns(replication, columns, sep="\t", sort=True))
    if s.controller is None:
        s.step("describe-status-controller", "no controller listener")
    else:
        on_controller = ("--bootstrap-controller", "{ctrl}", "describe", "--status")
        text = s.tool("MetadataQuorumCommand", *on_controller)
        s.step("describe-status-controller", _observers_sorted(mask_fields(mask(text), *moving)))


def kafka_log_dirs(s: Side) -> None:
    described = s.tool("LogDirsCommand", *BS, "--describe", "--topic-list", "tm-data")
    s.step("describe", re.sub(r'"size":\d+', '"size":<n>', mask(described)))


def kafka_leader_election(s: Side) -> None:
    election = ("LeaderElectionCommand", *BS, "--election-type")
    s.step("preferred", s.tool(*election, "preferred", "--topic", "tm-data", "--partition", "0"))
    s.step("unclean", s.tool(*election, "unclean", "--topic", "tm-data", "--partition", "1"))


def kafka_reassign_partitions(s: Side) -> None:
    folder = s.workdir
    folder.mkdir(parents=True, exist_ok=True)
    topics = folder / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": "tm-reassign"}]}))
    plan = folder / "plan.json"
    move = {"topic": "tm-reassign", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"]}
    plan.write_text(json.dumps({"version": 1, "partitions": [move]}))
    command = ("reassign.ReassignPartitionsCommand", *BS)
    generate = (*command, "--generate", "--topics-to-move-json-file", str(topics))
    generated = s.tool(*generate, "--broker-list", "1,2,3")
    # where Kafka proposes to put each replica is random; that it proposes is the answer
    s.step("generate", re.sub(r'"replicas":\[[\d,]*\]', '"replicas":<ids>', mask(generated)))
    executed = mask(s.tool(*command, "--execute", "--reassignment-json-file", str(plan)))
    s.step("execute", _replicas_sorted(executed))
    s.until(
        "verify",
        lambda: s.tool(*command, "--verify", "--reassignment-json-file", str(plan)),
        lambda text: "is still in progress" not in text,
    )


def kafka_delete_records(s: Side) -> None:
    offsets = s.workdir / "delete.json"
    offsets.parent.mkdir(parents=True, exist_ok=True)
    offsets.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": "tm-del", "partition": 0, "offset": 4}]})
    )
    s.step("delete", s.tool("DeleteRecordsCommand", *BS, "--offset-json-file", str(offsets)))
    s.step("earliest-after", s.tool("GetOffsetShell", *BS, "--topic", "tm-del", "--time", "-2"))


def kafka_get_offsets(s: Side) -> None:
    shell = ("GetOffsetShell", *BS)
    s.step("latest", s.tool(*shell, "--topic", "tm-data"))
    s.step("earliest", s.tool(*shell, "--topic", "tm-data", "--time", "-2"))
    s.step("partitions", s.tool(*shell, "--topic-partitions", "tm-data:1,tm-del:0", "--time", "-1"))
    s.step(
        "max-timestamp",
        re.sub(
            r":\d+$", ":<offset>", s.tool(*shell, "--topic", "tm-data", "--time", "-3"), flags=re.M
        ),
    )
    s.step("all-topics", s.tool(*shell, "--time", "-1"))


def kafka_streams_groups(s: Side) -> None:
    s.step("list", s.tool(STREAMS_GROUPS, *BS, "--list"))
    s.step("describe-unknown", s.tool(STREAMS_GROUPS, *BS, "--describe", "--group", "tm-nosuch"))


def kafka_perf_tests(s: Side) -> None:
    props = ("--command-property", "bootstrap.servers={bs}", "--command-property", "acks=all")
    produce = ("--topic", "tm-perf", "--num-records", "2000", "--record-size", "100")
    sent = s.tool("ProducerPerformance", *produce, "--throughput", "-1", *props)
    s.step("producer", re.sub(r"records sent.*", "records sent", sent.splitlines()[-1]))
    consume = ("--topic", "tm-perf", "--num-records", "2000", "--timeout", "30000")
    consumed = s.tool("ConsumerPerformance", *BS, *consume).splitlines()
    row = dict(zip(consumed[0].split(", "), consumed[-1].split(", "), strict=True))
    s.step("consumer", f"consumed at least 2000: {int(row['data.consumed.in.nMsg']) >= 2000}")


def kafka_verifiable_producer_and_consumer(s: Side) -> None:
    # both print their last events from a Runtime shutdown hook: each runs in a JVM of its own
    produce = ("--topic", "tm-perf", "--max-messages", "100")
    produced = s.tool("VerifiableProducer", *BS, *produce, jvm=True)
    s.step("producer", _event_counts(produced))
    consume = ("--topic", "tm-perf", "--group-id", "tm-verifiable", "--max-messages", "100")
    consumed = s.tool("VerifiableConsumer", *BS, *consume, "--reset-policy", "earliest", jvm=True)
    s.step("consumer", _event_counts(consumed, count_records=True))


# ------------------------------------------------------------------ normalisers


def _squeeze(text: str) -> str:
    """Space-aligned columns with one space between cells (widths follow the values)."""
    return "\n".join(" ".join(line.split()) for line in text.splitlines())


def _replicas_sorted(text: str) -> str:
    """Each "replicas" list of a reassignment JSON in id order: Kafka starts its placement at
    a random broker, the mock does not (as replica_sets does for kafka-topics)."""

    def by_id(m: re.Match[str]) -> str:
        return '"replicas":' + json.dumps(sorted(json.loads(m.group(1))), separators=(",", ":"))

    return re.sub(r'"replicas":(\[[\d,]*\])', by_id, text)


def _observers_sorted(text: str) -> str:
    """kafka-metadata-quorum's CurrentObservers in id order (Kafka prints them in hash order)."""

    def by_id(m: re.Match[str]) -> str:
        observers = sorted(json.loads(m.group(1)), key=lambda o: o["id"])
        return "CurrentObservers: " + json.dumps(observers)

    return re.sub(r"CurrentObservers:\s*(\[.*\])", by_id, text)


def _event_counts(text: str, count_records: bool = False) -> str:
    """How many of each event a verifiable client printed (one JSON object a line)."""
    counts: dict[str, int] = {}
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        name = event["name"]
        if count_records and name == "records_consumed":
            counts["records"] = counts.get("records", 0) + event["count"]
        elif name not in ("records_consumed", "offsets_committed"):
            counts[name] = counts.get(name, 0) + 1
    return json.dumps(counts, sort_keys=True)


# ------------------------------------------------------------------ the matrix

TOOLS: list[Callable[[Side], None]] = [
    kafka_topics,
    kafka_configs,
    kafka_features,
    kafka_console_producer_and_consumer,
    kafka_consumer_groups,
    kafka_share_groups,
    kafka_transactions,
    kafka_metadata_quorum,
    kafka_log_dirs,
    kafka_leader_election,
    kafka_reassign_partitions,
    kafka_delete_records,
    kafka_get_offsets,
    kafka_streams_groups,
]
if FULL:
    TOOLS += [kafka_perf_tests, kafka_verifiable_producer_and_consumer]
