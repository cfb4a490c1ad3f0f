"""codec.versions: the project's one parser of schema version ranges (`none`, `N`, `N-M`, `N+`)."""

from __future__ import annotations

from kipwire.codec import versions as codec_versions
from kipwire.codec.messages import fetch_request
from kipwire.generator import versions as generator_versions


def test_the_generator_reads_schemas_with_the_codecs_parser() -> None:
    assert generator_versions.Versions is codec_versions.Versions
    assert generator_versions.OPEN == codec_versions.OPEN


def test_the_generated_schema_tables_parse_and_answer_membership() -> None:
    fields = {row[0]: row for row in fetch_request.SCHEMA}
    _name, _type, versions, nullable, tagged, *_ = fields["ReplicaState"]
    parse = codec_versions.Versions.parse
    assert 15 in parse(versions) and 14 not in parse(versions)
    assert 15 in parse(tagged) and 16 not in parse(nullable)
    _name, _type, versions, *_ = fields["ClusterId"]
    assert 12 in parse(versions) and 11 not in parse(versions)
