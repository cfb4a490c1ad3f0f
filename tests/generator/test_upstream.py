"""import-upstream and jsonschemas/: the project's schemas hold upstream's facts, per version."""

from __future__ import annotations

import itertools
import json
import re
from functools import cache
from pathlib import Path

import pytest

from kipwire.codec import ApiKey
from kipwire.generator.jsonc import loads
from kipwire.generator.spec import MessageSpec, SchemaError, load_message, parse_message
from kipwire.generator.upstream import UpstreamError, import_errors, import_upstream, main
from kipwire.generator.versions import Versions
from kipwire.generator.wire import describe_difference, renames, signature

PROJECT = Path(__file__).resolve().parents[2]
SHARED = PROJECT.parent / "shared"
SCHEMAS = PROJECT / "jsonschemas"
# Oldest first, as the README's command gives them.
UPSTREAM_DIRS = [
    SHARED / "kafka-schemas" / "message",
    SHARED / "kafka-schemas" / "metadata",
    SHARED / "kafka-schemas-2025-01" / "message",
    SHARED / "kafka-schemas-2025-01" / "metadata",
    SHARED / "kafka-schemas-kafka-python-3.0.12",
    SHARED / "kafka-schemas-4.x" / "metadata",  # ClearElrRecord (Kafka 4.0+)
]
# Kafka 4.4.0 as released: newer than every snapshot above, and it wins where they differ.
RELEASE_DIRS = [SHARED / "kafka-schemas-4.4.0" / d for d in ("message", "metadata", "other")]
needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(), reason=f"upstream schemas not available ({SHARED} is absent)"
)

# The only places where upstream folders disagree on a version both define (see README.md).
RENAMED = {  # upstream renamed these fields without changing a byte; the later name wins
    ("kafka-schemas/message/VoteRequest.json", "Topics.Partitions.CandidateEpoch"): "ReplicaEpoch",
    ("kafka-schemas/message/VoteRequest.json", "Topics.Partitions.CandidateId"): "ReplicaId",
    (
        "kafka-schemas/message/VoteRequest.json",
        "Topics.Partitions.CandidateDirectoryId",
    ): "ReplicaDirectoryId",
    **{
        (f"{folder}/TxnOffsetCommitRequest.json", "GenerationId"): "GenerationIdOrMemberEpoch"
        for folder in (
            "kafka-schemas/message",
            "kafka-schemas-2025-01/message",
            "kafka-schemas-kafka-python-3.0.12",
        )
    },
}
SUPERSEDED_UNSTABLE = {
    ("kafka-schemas/message/ShareFetchRequest.json", 0),
    ("kafka-schemas/message/ReadShareGroupStateSummaryResponse.json", 0),
    ("kafka-schemas-2025-01/message/ReadShareGroupStateSummaryResponse.json", 0),
    ("kafka-schemas-2025-01/message/DescribeShareGroupOffsetsRequest.json", 0),
    ("kafka-schemas-2025-01/message/DescribeShareGroupOffsetsResponse.json", 0),
}
# Pre-release definitions (not marked unstable) that differ from what Kafka 4.4.0 shipped.
SUPERSEDED_BY_RELEASE = {
    ("kafka-schemas-2025-01/message/StreamsGroupHeartbeatRequest.json", 0),
    ("kafka-schemas-2025-01/message/StreamsGroupHeartbeatResponse.json", 0),
}
# Trunk's reverted GetReplicaLogInfo draft (apiKey 93): the project's extension replaces it.
DRAFTS = {
    "kafka-schemas/message/GetReplicaLogInfoRequest.json",
    "kafka-schemas/message/GetReplicaLogInfoResponse.json",
}

# The record format's control key (version and type, as written) has no upstream schema file
# (4.4.0's ControlRecordTypeSchema is the type alone); the project defines it in extensions/.
PROJECT_DEFINED = {"ControlRecordType"}


def rel(path: Path) -> str:
    return path.relative_to(SHARED).as_posix()


@cache
def upstream_files() -> list[tuple[Path, dict, MessageSpec]]:
    """Every upstream schema file, as (path, document, spec)."""
    out = []
    for top in [*UPSTREAM_DIRS, *RELEASE_DIRS]:
        for path in sorted(top.rglob("*.json")):
            doc = loads(path.read_text(encoding="utf-8"))
            out.append((path, doc, parse_message(doc, str(path))))
    return out


@cache
def project() -> dict[str, MessageSpec]:
    """The committed project schemas by message name."""
    specs = {}
    for path in sorted(SCHEMAS.glob("*.json")):
        spec = load_message(path)
        assert path.name == f"{spec.name}.json"
        specs[spec.name] = spec
    return specs


def upstream_ids() -> list[str]:
    if not SHARED.is_dir():
        return []
    return [rel(p) for top in [*UPSTREAM_DIRS, *RELEASE_DIRS] for p in sorted(top.rglob("*.json"))]


def expected_renames(path: Path) -> list[tuple[str, str]]:
    return sorted((f, new) for (p, f), new in RENAMED.items() if p == rel(path))


# --- the committed files against upstream -------------------------------------------------------


@needs_shared
@pytest.mark.parametrize("upstream", upstream_ids())
def test_project_schema_is_wire_equivalent_to_upstream_file(upstream: str):
    path = SHARED / upstream
    spec = next(s for p, _, s in upstream_files() if p == path)
    mine = project()[spec.name]
    if upstream in DRAFTS:
        # Same bytes as the trunk draft, under the extension's own key.
        # the draft's key is the one Kafka 4.4.0 gave StreamsGroupTopologyDescriptionUpdate
        assert mine.api_key != spec.api_key
        assert spec.api_key == project()["StreamsGroupTopologyDescriptionUpdateRequest"].api_key
        assert mine.extension_versions == mine.valid_versions == spec.valid_versions
        return
    assert mine.api_key == spec.api_key
    assert mine.type == spec.type
    assert mine.valid_versions.covers(spec.valid_versions)
    renamed: set[tuple[str, str]] = set()
    for v in range(spec.valid_versions.lo, spec.valid_versions.hi + 1):
        theirs, ours = signature(spec, v), signature(mine, v)
        if (upstream, v) in SUPERSEDED_UNSTABLE:
            # only the request carries the flag; its response is as provisional
            assert spec.latest_version_unstable or spec.type == "response"
            assert v == spec.valid_versions.hi
            assert theirs != ours  # otherwise the exception is stale: remove it
            continue
        if (upstream, v) in SUPERSEDED_BY_RELEASE:
            assert theirs != ours  # otherwise the exception is stale: remove it
            continue
        if theirs != ours:
            found = renames(theirs, ours)
            assert found, f"{spec.name} v{v}: {describe_difference(theirs, ours)}"
            renamed.update(found)
    assert sorted(renamed) == expected_renames(path)


@needs_shared
def test_the_release_decides_which_latest_version_is_unstable():
    # A snapshot's unstable EndTxn v5 is stable in Kafka 4.4.0; the release has the last word.
    wrong = []
    for path, _, spec in upstream_files():
        mine = project().get(spec.name)
        if path.parent != RELEASE_DIRS[0] or spec.type != "request" or mine is None:
            continue
        same_latest = mine.valid_versions.hi == spec.valid_versions.hi
        if same_latest and mine.latest_version_unstable != spec.latest_version_unstable:
            wrong.append(spec.name)
    assert wrong == []
    assert not project()["EndTxnRequest"].latest_version_unstable


@needs_shared
def test_overlapping_upstream_folders_agree_except_the_listed_cases():
    by_name: dict[str, list[tuple[Path, MessageSpec]]] = {}
    for path, _, spec in upstream_files():
        by_name.setdefault(spec.name, []).append((path, spec))
    compared, exceptions = 0, set()
    for (pa, a), (pb, b) in itertools.chain.from_iterable(
        itertools.combinations(group, 2) for group in by_name.values()
    ):
        both = a.valid_versions.intersect(b.valid_versions)
        for v in range(both.lo, both.hi + 1):
            compared += 1
            sa, sb = signature(a, v), signature(b, v)
            if sa == sb:
                continue
            if (rel(pa), v) in SUPERSEDED_UNSTABLE | SUPERSEDED_BY_RELEASE:
                exceptions.add((rel(pa), v))
            else:
                found = renames(sa, sb)
                assert found, f"{a.name} v{v}: {pa} vs {pb}: {describe_difference(sa, sb)}"
                assert set(found) <= set(expected_renames(pa))
                exceptions.update((rel(pa), f) for f, _ in found)
    assert compared > 1000  # the folders overlap on most of the protocol
    assert exceptions == SUPERSEDED_UNSTABLE | SUPERSEDED_BY_RELEASE | set(RENAMED)


@needs_shared
def test_every_upstream_message_has_a_project_file_and_nothing_else_does():
    upstream_names = {spec.name for _, _, spec in upstream_files()}
    assert {spec.type for _, _, spec in upstream_files()} == {
        "request",
        "response",
        "header",
        "metadata",
        "data",
        "coordinator-key",
        "coordinator-value",
    }
    assert set(project()) == upstream_names | PROJECT_DEFINED
    assert {"RequestHeader", "ResponseHeader", "ConsumerProtocolSubscription"} <= set(project())
    assert {"ConsumerProtocolAssignment", "LeaderChangeMessage", "PartitionRecord"} <= set(
        project()
    )
    assert {"OffsetCommitKey", "ShareSnapshotValue", "QuorumStateData"} <= set(project())


@needs_shared
def test_project_versions_are_the_union_of_upstream_versions():
    union: dict[str, tuple[int, int]] = {}
    for _, _, spec in upstream_files():
        v = spec.valid_versions
        if not v.empty:
            lo, hi = union.get(spec.name, (v.lo, v.hi))
            union[spec.name] = (min(lo, v.lo), max(hi, v.hi))
    for name, spec in project().items():
        if name in PROJECT_DEFINED or spec.extension_versions == spec.valid_versions:
            continue
        shipped = Versions(spec.valid_versions.lo, spec.valid_versions.hi)
        if not spec.extension_versions.empty:
            shipped = Versions(shipped.lo, spec.extension_versions.lo - 1)
        assert (shipped.lo, shipped.hi) == union[name], name


@needs_shared
@pytest.mark.parametrize(
    ("name", "versions"),
    [
        ("ProduceRequest", "0-13"),
        ("FetchRequest", "0-18"),
        ("FetchResponse", "0-18"),
        ("MetadataRequest", "0-13"),
        ("ListOffsetsRequest", "0-11"),
        ("OffsetCommitRequest", "0-10"),
        ("OffsetFetchRequest", "0-10"),
        ("LeaderAndIsrRequest", "0-7"),  # gone from the 2025 folder ("none"), kept
        ("GetReplicaLogInfoRequest", "0"),
        ("ShareFetchRequest", "0-2"),  # v0 withdrawn (early access), v1-v2 shipped
        ("ApiVersionsRequest", "0-5"),  # v5: KIP-1242 ClusterId/NodeId
        ("TxnOffsetCommitRequest", "0-6"),
        ("StreamsGroupHeartbeatRequest", "0-1"),
        ("BrokerHeartbeatRequest", "0-2"),
        ("RegisterBrokerRecord", "0-4"),
        ("BrokerRegistrationChangeRecord", "0-3"),
    ],
)
def test_union_covers_old_and_new_clients(name: str, versions: str):
    assert str(project()[name].valid_versions) == versions


@needs_shared
def test_api_keys_are_upstream_ones():
    # Kafka 4.4.0's numbering, as its own files give it: 93 and 94 are what it ships, and
    # GetReplicaLogInfo left 93 for a key no release uses.
    shipped = {s.name: s.api_key for _, _, s in upstream_files() if s.type == "request"}
    for name in (
        "StreamsGroupTopologyDescriptionUpdateRequest",
        "UnregisterControllerRequest",
        "DescribeTopicPartitionsRequest",
        "ElectLeadersRequest",
    ):
        assert project()[name].api_key == shipped[name], name
    assert ApiKey(shipped["StreamsGroupTopologyDescriptionUpdateRequest"]).value == 93
    for name in ("GetReplicaLogInfoRequest", "GetReplicaLogInfoResponse"):
        assert project()[name].api_key == ApiKey.GET_REPLICA_LOG_INFO
        assert ApiKey.GET_REPLICA_LOG_INFO not in shipped.values()


@needs_shared
def test_reimport_reproduces_the_committed_files_byte_for_byte(tmp_path: Path):
    written = import_upstream(
        UPSTREAM_DIRS, tmp_path, SCHEMAS / "extensions", releases=RELEASE_DIRS
    )
    written.append(import_errors(SHARED / "kafka-errors.tsv", tmp_path))
    # enums.tsv holds numbers Kafka defines in Java classes, not in schema files: kept by hand
    own = {"enums.tsv"}
    committed = sorted(
        p.name for p in SCHEMAS.iterdir() if p.is_file() and p.suffix != ".md" and p.name not in own
    )
    assert sorted(written) == committed
    for name in committed:
        assert (tmp_path / name).read_bytes() == (SCHEMAS / name).read_bytes(), name


@needs_shared
def test_no_upstream_prose_is_copied():
    prose = set()
    for path, doc, _ in upstream_files():
        prose.update(s for s in _abouts(doc) if len(s.split()) >= 4)
        for line in path.read_text(encoding="utf-8").splitlines():
            comment = line.strip()
            if comment.startswith("//") and len(comment[2:].split()) >= 5:
                prose.add(comment[2:].strip())
    assert len(prose) > 1000
    for path in sorted(SCHEMAS.rglob("*")):
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        assert '"about"' not in text, path
        copied = [p for p in prose if p in text]
        assert not copied, f"{path} copies upstream text: {copied[:3]}"


def _abouts(node: object):
    if isinstance(node, dict):
        if isinstance(node.get("about"), str):
            yield node["about"].strip()
        for value in node.values():
            yield from _abouts(value)
    elif isinstance(node, list):
        for value in node:
            yield from _abouts(value)


@needs_shared
def test_errors_tsv_holds_the_upstream_facts():
    rows = [
        line.split("\t")
        for line in (SHARED / "kafka-errors.tsv").read_text(encoding="utf-8").splitlines()
    ]
    ours = [line.split("\t") for line in (SCHEMAS / "errors.tsv").read_text().splitlines()]
    assert ours[0] == ["code", "name", "retriable"]
    assert ours == [row[:3] for row in rows]
    assert ["-1", "UNKNOWN_SERVER_ERROR", "false"] in ours
    assert all(r[2] in ("true", "false") for r in ours[1:])


# --- the KIP-966 extension ----------------------------------------------------------------------


def test_extensions_are_elect_leaders_v3_and_get_replica_log_info():
    extended = {n: s for n, s in project().items() if not s.extension_versions.empty}
    assert set(extended) == {
        "ElectLeadersRequest",
        "ElectLeadersResponse",
        "GetReplicaLogInfoRequest",
        "GetReplicaLogInfoResponse",
    }
    for name in ("GetReplicaLogInfoRequest", "GetReplicaLogInfoResponse"):
        assert str(extended.pop(name).extension_versions) == "0"
    for spec in extended.values():
        assert str(spec.extension_versions) == "3"
        assert str(spec.valid_versions) == "0-3"
        assert json.loads((SCHEMAS / f"{spec.name}.json").read_text())["extensionVersions"] == "3"


def test_desired_leaders_exists_in_v3_only():
    spec = project()["ElectLeadersRequest"]
    topic = next(f for f in spec.fields if f.name == "TopicPartitions").struct
    assert [f.name for f in topic.fields] == ["Topic", "Partitions", "DesiredLeaders"]
    desired = topic.fields[2]
    assert str(desired.type) == "[]int32"
    assert str(desired.versions) == "3+"
    assert str(desired.nullable_versions) == "3+"
    assert desired.tag is None
    v2, v3 = signature(spec, 2), signature(spec, 3)
    assert "DesiredLeaders" not in repr(v2)
    # v3 is v2 plus the one field: same flexibility and the same top-level fields.
    assert v3.flexible == v2.flexible
    assert [f.name for f in v3.fields] == [f.name for f in v2.fields]


def test_elect_leaders_response_v3_is_v2():
    spec = project()["ElectLeadersResponse"]
    assert signature(spec, 3) == signature(spec, 2)


@needs_shared
def test_elect_leaders_shipped_versions_are_untouched():
    shipped = [s for _, _, s in upstream_files() if s.name.startswith("ElectLeaders")]
    assert shipped and all(s.valid_versions.hi == 2 for s in shipped)
    for s in shipped:
        for v in range(s.valid_versions.lo, 3):
            assert signature(s, v) == signature(project()[s.name], v)


def test_spec_accepts_extension_versions_only_as_the_newest_versions():
    def doc(valid: str, ext: object) -> dict:
        return {**_doc("X", valid, [_f("A")]), "extensionVersions": ext}

    assert str(parse_message(doc("0-3", "3")).extension_versions) == "3"
    assert str(parse_message(doc("0-3", "2-3")).extension_versions) == "2-3"
    assert parse_message(_doc("X", "0-3", [_f("A")])).extension_versions.empty
    for valid, ext in [("0-3", "2"), ("0-3", "4"), ("0-3", "3+"), ("0-3", 3), ("0-3", "x")]:
        with pytest.raises(SchemaError, match="extensionVersions"):
            parse_message(doc(valid, ext))


# --- import-upstream on small hand-written folders ----------------------------------------------


def _f(name: str, type: str = "int32", versions: str = "0+", **extra) -> dict:
    return {"name": name, "type": type, "versions": versions, **extra}


def _doc(name: str, valid: str, fields: list[dict], **extra) -> dict:
    return {
        "apiKey": 1000,
        "type": "request",
        "name": name,
        "validVersions": valid,
        "flexibleVersions": "1+",
        "fields": fields,
        **extra,
    }


def _write(folder: Path, *docs: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for d in docs:
        (folder / f"{d['name']}.json").write_text(json.dumps(d), encoding="utf-8")
    return folder


def test_union_of_two_folders(tmp_path: Path):
    old = _write(
        tmp_path / "old",
        _doc("XRequest", "0-2", [_f("A"), _f("Gone", versions="0"), _f("S", "string")]),
    )
    new = _write(
        tmp_path / "new",
        _doc(
            "XRequest",
            "1-3",
            [
                _f("A", about="Upstream prose."),
                _f("S", "string", nullableVersions="3+"),
                _f("T", "bool", "3+", taggedVersions="3+", tag="0", default=True),
            ],
        ),
    )
    out = tmp_path / "out"
    assert import_upstream([old, new], out) == ["XRequest.json"]
    merged = json.loads((out / "XRequest.json").read_text())
    assert merged["validVersions"] == "0-3"
    assert merged["flexibleVersions"] == "1+"
    assert [(f["name"], f["versions"]) for f in merged["fields"]] == [
        ("A", "0+"),
        ("Gone", "0"),
        ("S", "0+"),
        ("T", "3+"),
    ]
    t = merged["fields"][3]
    assert (t["tag"], t["default"], t["taggedVersions"]) == (0, "true", "3+")
    assert merged["fields"][2]["nullableVersions"] == "3+"
    assert "about" not in (out / "XRequest.json").read_text()
    # Deterministic: the second run writes the same bytes.
    first = (out / "XRequest.json").read_bytes()
    import_upstream([old, new], out)
    assert (out / "XRequest.json").read_bytes() == first


def test_closed_range_stays_closed_when_the_newest_folder_says_so(tmp_path: Path):
    src = _write(tmp_path / "a", _doc("XRequest", "0-3", [_f("A", versions="1-3")]))
    import_upstream([src], tmp_path / "out")
    merged = json.loads((tmp_path / "out" / "XRequest.json").read_text())
    assert merged["fields"][0]["versions"] == "1-3"


def test_disagreement_names_message_version_and_difference(tmp_path: Path):
    a = _write(tmp_path / "a", _doc("XRequest", "0-2", [_f("A")]))
    b = _write(tmp_path / "b", _doc("XRequest", "2-3", [_f("A", "int64")]))
    with pytest.raises(
        UpstreamError, match=r"XRequest v2: .* disagree: A: type 'int32' vs 'int64'"
    ):
        import_upstream([a, b], tmp_path / "out")
    assert main([str(a), str(b), "--out", str(tmp_path / "out")]) == 1
    assert not (tmp_path / "out").exists()


def test_unstable_latest_version_is_replaced_by_a_later_folder(tmp_path: Path):
    a = _write(tmp_path / "a", _doc("XRequest", "0", [_f("A")], latestVersionUnstable=True))
    b = _write(tmp_path / "b", _doc("XRequest", "0", [_f("A"), _f("B")]))
    notes: list[str] = []
    import_upstream([a, b], tmp_path / "out", notes=notes)
    assert len(notes) == 1 and "unstable" in notes[0]
    merged = load_message(tmp_path / "out" / "XRequest.json")
    assert [f.name for f in merged.fields] == ["A", "B"]


def test_gap_in_versions_fails(tmp_path: Path):
    a = _write(tmp_path / "a", _doc("XRequest", "0-1", [_f("A")]))
    b = _write(tmp_path / "b", _doc("XRequest", "3-4", [_f("A")]))
    with pytest.raises(UpstreamError, match="versions 2-2 are missing"):
        import_upstream([a, b], tmp_path / "out")


def test_extension_is_merged_and_may_not_collide_with_shipped_versions(tmp_path: Path):
    up = _write(tmp_path / "up", _doc("XRequest", "0-2", [_f("A")]))
    ext = _write(
        tmp_path / "ext",
        _doc("XRequest", "3", [_f("A"), _f("B", versions="3+")], extensionVersions="3"),
    )
    import_upstream([up], tmp_path / "out", ext)
    merged = load_message(tmp_path / "out" / "XRequest.json")
    assert str(merged.extension_versions) == "3" and str(merged.valid_versions) == "0-3"
    assert [f.name for f in merged.struct.fields_in(2)] == ["A"]
    assert [f.name for f in merged.struct.fields_in(3)] == ["A", "B"]
    # Once upstream ships v3 itself, the extension must not silently redefine it.
    up3 = _write(tmp_path / "up3", _doc("XRequest", "0-3", [_f("A")]))
    with pytest.raises(UpstreamError, match="collides with shipped versions"):
        import_upstream([up3], tmp_path / "out", ext)
    # An extension file that defines shipped versions as well is refused.
    wide = _write(tmp_path / "wide", _doc("XRequest", "0-3", [_f("A")], extensionVersions="3"))
    with pytest.raises(UpstreamError, match="defines only its extensionVersions"):
        import_upstream([up], tmp_path / "out", wide)


def test_extension_folder_defaults_to_out_extensions(tmp_path: Path):
    up = _write(tmp_path / "up", _doc("XRequest", "0-2", [_f("A")]))
    out = tmp_path / "out"
    _write(out / "extensions", _doc("XRequest", "3", [_f("A")], extensionVersions="3"))
    main([str(up), "--out", str(out)])
    assert re.search(r'"extensionVersions": "3"', (out / "XRequest.json").read_text())


def test_unreadable_file_is_named(tmp_path: Path):
    folder = tmp_path / "a"
    folder.mkdir()
    (folder / "Broken.json").write_text("{ not json", encoding="utf-8")
    with pytest.raises(UpstreamError, match=r"Broken.json: not valid JSON"):
        import_upstream([folder], tmp_path / "out")


def test_a_release_wins_over_a_pre_release_snapshot(tmp_path: Path):
    snap = _write(tmp_path / "snap", _doc("XRequest", "0-1", [_f("A")]))
    rel_dir = _write(tmp_path / "rel", _doc("XRequest", "1-2", [_f("B", "int64"), _f("A")]))
    # Between two snapshots the same difference is an error ...
    with pytest.raises(UpstreamError, match=r"XRequest v1: .* disagree"):
        import_upstream([snap, rel_dir], tmp_path / "out")
    # ... but a release's definition replaces the snapshot's, with a note.
    notes: list[str] = []
    import_upstream([snap], tmp_path / "out", notes=notes, releases=[rel_dir])
    assert any("XRequest v1" in n and "replaced by release" in n for n in notes)
    merged = load_message(tmp_path / "out" / "XRequest.json")
    assert str(merged.valid_versions) == "0-2"
    assert [f.name for f in merged.struct.fields_in(0)] == ["A"]
    assert [f.name for f in merged.struct.fields_in(1)] == ["B", "A"]
    assert main([str(snap), "--release", str(rel_dir), "--out", str(tmp_path / "cli")]) == 0


def test_a_whole_extension_api_replaces_a_draft_and_takes_an_unused_key(tmp_path: Path):
    draft = _write(tmp_path / "snap", _doc("YRequest", "0", [_f("A")], apiKey=93))
    ext_doc = _doc("YRequest", "0", [_f("A")], apiKey=5000, extensionVersions="0")
    ext = _write(tmp_path / "ext", ext_doc)
    notes: list[str] = []
    import_upstream([draft], tmp_path / "out", ext, notes)
    merged = load_message(tmp_path / "out" / "YRequest.json")
    assert merged.api_key == 5000 and str(merged.extension_versions) == "0"
    assert any("draft" in n for n in notes)
    # A release that ships the message, or a key upstream already uses, is refused.
    shipped = _write(tmp_path / "rel", _doc("YRequest", "0", [_f("A")], apiKey=93))
    with pytest.raises(UpstreamError, match="not an extension"):
        import_upstream([draft], tmp_path / "out", ext, releases=[shipped])
    taken = _write(tmp_path / "taken", _doc("ZRequest", "0", [_f("A")], apiKey=5000))
    with pytest.raises(UpstreamError, match="apiKey 5000 of YRequest is used upstream"):
        import_upstream([taken], tmp_path / "out", ext)


def test_withdrawn_versions_are_marked_and_must_lie_below_the_release(tmp_path: Path):
    snap = _write(tmp_path / "snap", _doc("XRequest", "0", [_f("A")]))
    rel_dir = _write(tmp_path / "rel", _doc("XRequest", "1", [_f("A"), _f("B")]))
    ext = tmp_path / "ext"
    ext.mkdir()
    (ext / "withdrawn.tsv").write_text("message\tversions\twhy\nXRequest\t0\tearly access\n")
    import_upstream([snap], tmp_path / "out", ext, releases=[rel_dir])
    merged = load_message(tmp_path / "out" / "XRequest.json")
    assert str(merged.withdrawn_versions) == "0" and str(merged.valid_versions) == "0-1"
    (ext / "withdrawn.tsv").write_text("message\tversions\twhy\nXRequest\t0-1\tno\n")
    with pytest.raises(UpstreamError, match="in a release folder's versions"):
        import_upstream([snap], tmp_path / "out", ext, releases=[rel_dir])


def test_spec_accepts_withdrawn_versions_only_as_the_oldest_versions():
    def doc(valid: str, gone: str) -> dict:
        return {**_doc("X", valid, [_f("A")]), "withdrawnVersions": gone}

    assert str(parse_message(doc("0-2", "0")).withdrawn_versions) == "0"
    assert parse_message(_doc("X", "0-2", [_f("A")])).withdrawn_versions.empty
    for valid, gone in [("0-2", "1"), ("0-2", "0-2"), ("0-2", "0+")]:
        with pytest.raises(SchemaError, match="withdrawnVersions"):
            parse_message(doc(valid, gone))
