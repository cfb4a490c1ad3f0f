"""The semantic headline: differences in meaning ranked, rules, --clients-only, --fail-on semantic.

Synthetic workloads come from `test_capture_compare`; the re-run test records the same client
story twice against a 3-broker mock cluster (brokers register in any order there).
"""

from __future__ import annotations

import json
import time

import pytest
from test_capture_compare import VOLATILE_RUN, Run, decoded

from kipwire.captures import SemanticDifference, compare
from kipwire.captures.comparing.compare import main_compare, parse_fail_on
from kipwire.captures.comparing.rules import RulesError, load_rules
from kipwire.codec import ErrorCode


def test_same_workload_has_no_semantic_difference(tmp_path):
    base = decoded(tmp_path, "base", Run())
    cand = decoded(tmp_path, "cand", VOLATILE_RUN)
    assert compare(base, cand).semantic_differences == []
    out = str(tmp_path / "r")
    assert main_compare([str(base), str(cand), "--out", out, "--fail-on", "semantic"]) == 0
    doc = json.loads((tmp_path / "r" / "diff.json").read_text())
    assert doc["semantic_differences"] == []


def test_an_error_the_client_saw_leads_the_headline(tmp_path, capsys):
    base = decoded(tmp_path, "base", Run())
    cand = decoded(
        tmp_path,
        "cand",
        Run(**{**VOLATILE_RUN.__dict__, "produce_error": ErrorCode.NOT_ENOUGH_REPLICAS}),
    )
    sem = compare(base, cand).semantic_differences
    assert sem[0] == SemanticDifference(
        "errors",
        "Produce orders-producer",
        0,
        1,
        "Produce errors NOT_ENOUGH_REPLICAS 0 vs 1 (client orders-producer)",
    )
    # the refused batch was not acknowledged: three records fewer on orders-1
    assert sem[1].kind == "acknowledged" and (sem[1].subject, sem[1].baseline) == ("orders-1", 6)
    assert sem[1].candidate == 3
    out = str(tmp_path / "r")
    assert main_compare([str(base), str(cand), "--out", out, "--fail-on", "semantic"]) == 1
    printed = capsys.readouterr()
    assert "semantic differences 2, first: Produce errors NOT_ENOUGH_REPLICAS 0 vs 1" in printed.out
    assert printed.err == "failing: differences of kind semantic\n"
    doc = json.loads((tmp_path / "r" / "diff.json").read_text())
    assert doc["semantic_differences"][0]["summary"] == sem[0].summary
    assert set(doc["semantic_differences"][0]) == {
        "kind",
        "subject",
        "baseline",
        "candidate",
        "summary",
    }


def test_an_error_seen_alike_in_both_runs_is_told_but_not_a_difference(tmp_path):
    refused = {"produce_error": ErrorCode.NOT_ENOUGH_REPLICAS}
    base = decoded(tmp_path, "base", Run(**refused))
    cand = decoded(tmp_path, "cand", Run(**{**VOLATILE_RUN.__dict__, **refused}))
    assert compare(base, cand).semantic_differences == []
    out = tmp_path / "r"
    assert main_compare([str(base), str(cand), "--out", str(out), "--fail-on", "semantic"]) == 0
    md = (out / "report.md").read_text()
    headline = md.split("## Semantic differences, most important first", 1)[1].split("##")[0]
    assert "No semantic difference" in headline
    assert "Seen alike in both: Produce errors NOT_ENOUGH_REPLICAS 1 vs 1" in headline


def test_a_client_setting_is_semantic_and_a_rule_makes_it_volatile(tmp_path):
    base = decoded(tmp_path, "base", Run())
    cand = decoded(tmp_path, "cand", Run(**{**VOLATILE_RUN.__dict__, "compression": "gzip"}))
    (found,) = compare(base, cand).semantic_differences
    assert (found.kind, found.subject) == (
        "request",
        "Produce.topic_data.partition_data.records.compression",
    )
    assert (found.baseline, found.candidate) == ("none", "gzip")
    assert "(orders-producer, 6 times)" in found.summary
    toml = tmp_path / "rules.toml"
    toml.write_text('[fields]\n"Produce.*.compression" = "volatile"\n')
    assert compare(base, cand, rules=toml).semantic_differences == []
    as_json = tmp_path / "rules.json"
    as_json.write_text(json.dumps({"fields": {"semantic.request": "ignore"}}))
    out = str(tmp_path / "r")
    args = [str(base), str(cand), "--out", out, "--fail-on", "semantic"]
    assert main_compare(args) == 1
    assert main_compare([*args, "--rules", str(as_json)]) == 0


def test_a_rule_makes_a_volatile_field_semantic(tmp_path):
    base = decoded(tmp_path, "base", Run())
    cand = decoded(tmp_path, "cand", VOLATILE_RUN)
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"fields": {"Fetch.session_id": "semantic"}}))
    sem = compare(base, cand, rules=rules).semantic_differences
    assert [(d.subject, d.baseline, d.candidate) for d in sem] == [("Fetch.session_id", 77, 4242)]


def test_bad_rule_files_are_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"fields": {"producer_id": "sometimes"}}))
    with pytest.raises(RulesError, match="class 'sometimes'"):
        load_rules(bad)
    base = decoded(tmp_path, "base", Run())
    assert (
        main_compare([str(base), str(base), "--out", str(tmp_path / "r"), "--rules", str(bad)]) == 2
    )
    assert "known: semantic, volatile, ignore" in capsys.readouterr().err
    (tmp_path / "nofields.toml").write_text("x = 1\n")
    with pytest.raises(RulesError, match="table `fields`"):
        load_rules(tmp_path / "nofields.toml")


def test_fail_on_semantic_parses():
    assert parse_fail_on("semantic,rtt") == {"semantic", "rtt"}


# -- the same client story twice against the mock ------------------------------------------------

RECORDS = 30


def _story(path) -> None:
    """An idempotent producer writes RECORDS records; a reader reads them back."""
    confluent = pytest.importorskip("confluent_kafka")
    from kipwire.mockbroker import MockCluster

    with MockCluster(brokers=3, record=str(path)) as cluster:
        cluster.create_topic("story", 1, 3, {"min.insync.replicas": 2})
        producer = confluent.Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "client.id": "story-producer",
                "acks": "all",
                "enable.idempotence": True,
            }
        )
        for i in range(RECORDS):
            producer.produce("story", str(i).encode(), key=b"k%d" % i)
        assert producer.flush(20) == 0
        reader = confluent.Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "client.id": "story-reader",
                "group.id": "story-reader",
                "enable.auto.commit": False,
            }
        )
        reader.assign([confluent.TopicPartition("story", 0, confluent.OFFSET_BEGINNING)])
        seen: set[bytes] = set()
        deadline = time.monotonic() + 20
        while len(seen) < RECORDS and time.monotonic() < deadline:
            seen.update(m.value() for m in reader.consume(100, 0.2) if m.error() is None)
        reader.close()
        assert len(seen) == RECORDS


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """The story recorded twice, each run decoded with the local engine."""
    from kipwire.captures import run_local

    tmp = tmp_path_factory.mktemp("semantic-reruns")
    dirs = []
    for name in ("first", "second"):
        _story(tmp / f"{name}.pcapng")
        run_local([str(tmp / f"{name}.pcapng")], tmp / name, capture=name)
        dirs.append(tmp / name)
    return dirs


def test_rerunning_a_story_against_the_mock_means_the_same(two_runs, tmp_path):
    first, second = two_runs
    report = compare(first, second)
    assert report.semantic_differences == []
    # the brokers' epochs in their Fetch requests are volatile: no `changed` difference on them
    assert not [d for d in report.differences if "epoch" in d.path]
    assert not [d for d in report.differences if d.kind == "records"]
    # the headline still sees the story: the same partition, created once in each run
    (row,) = report.timelines
    assert (row["topic"], row["partition"]) == ("story", 0)
    assert [s["election"] for s in row["baseline"]["states"]] == ["created"]
    assert sum(n for _, n in row["candidate"]["acks"]) == RECORDS
    out = str(tmp_path / "r")
    assert main_compare([str(first), str(second), "--out", out, "--fail-on", "semantic"]) == 0


def test_clients_only_sets_the_clusters_traffic_aside(two_runs):
    first, second = two_runs
    full = compare(first, second)
    clients = compare(first, second, clients_only=True)
    apis = {d.api_name for d in clients.differences}
    internal = {"BrokerHeartbeat", "BrokerRegistration", "AlterPartition"}
    assert apis.isdisjoint(internal)
    assert {r["api"] for r in full.mix} & internal
    assert not {r["api"] for r in clients.mix} & internal
    assert clients.timelines == [] and clients.metadata == {"baseline": [], "candidate": []}
    assert clients.semantic_differences == []
    assert clients.alignment["matched_connections"] < full.alignment["matched_connections"]
    assert clients.to_json()["options"]["clients_only"] is True


def test_every_column_the_compare_reads_is_classified():
    from kipwire.captures.comparing.load import _OPTIONAL, _REQUIRED
    from kipwire.captures.comparing.rules import CLASSES, COLUMNS

    read = {c for cols in (*_REQUIRED.values(), *_OPTIONAL.values()) for c in cols}
    assert read <= set(COLUMNS), read - set(COLUMNS)
    assert {cls for cls, _ in COLUMNS.values()} <= set(CLASSES)


def test_other_record_values_rank_before_the_request_fields_that_carry_them(tmp_path):
    base = decoded(tmp_path, "base", Run())
    cand = decoded(tmp_path, "cand", Run(**{**VOLATILE_RUN.__dict__, "value_suffix": b"!"}))
    sem = compare(base, cand).semantic_differences
    records = [d for d in sem if d.kind == "records"]
    assert [d.subject for d in records] == ["audit-0", "orders-0", "orders-1"]
    assert all(d.summary.endswith("differ in keys or values (6 of 6)") for d in records)
    assert sem[: len(records)] == records
    assert {d.kind for d in sem[len(records) :]} == {"request"}
    assert all(d.subject.endswith(".records.value") for d in sem[len(records) :])
