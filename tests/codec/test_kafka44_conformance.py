"""Every (message, version) Kafka 4.4.0 ships encodes and decodes exactly as Kafka defines it.

Kafka 4.4.0's own schema files (`../shared/kafka-schemas-4.4.0/`, from its jars) are the reference:
each folder is compiled as it is, with the project's generator, into a throwaway package that
knows nothing of `jsonschemas/`. For each message version, kipwire's codec and the reference codec
must describe the same wire format (field by field), write the same bytes for the same values,
and each must read the other's bytes into the same values.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest
from codec_paths import each_codec_path
from codec_strategies import plain, values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipwire import codec
from kipwire.generator.build import generate, write
from kipwire.generator.spec import MessageSpec, load_message
from kipwire.generator.wire import describe_difference, signature

ROOT = Path(__file__).resolve().parents[2]
KAFKA_44 = ROOT.parent / "shared" / "kafka-schemas-4.4.0"
FOLDERS = ("message", "metadata", "other")
needs_kafka_44 = pytest.mark.skipif(
    not KAFKA_44.is_dir(), reason=f"Kafka 4.4.0's schema files are not available ({KAFKA_44})"
)
SETTINGS = settings(
    max_examples=int(os.environ.get("KIPWIRE_EXAMPLES", "4")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@cache
def reference_specs() -> dict[str, MessageSpec]:
    """Kafka 4.4.0's messages by name, as its schema files define them."""
    specs = {}
    for folder in FOLDERS:
        for path in sorted((KAFKA_44 / folder).glob("*.json")):
            spec = load_message(path)
            specs[spec.name] = spec
    return specs


def pairs() -> list[tuple[str, int]]:
    """Every (message, version) Kafka 4.4.0 defines."""
    if not KAFKA_44.is_dir():
        return []
    return [
        (name, v)
        for name, spec in sorted(reference_specs().items())
        if not spec.valid_versions.empty
        for v in range(spec.valid_versions.lo, spec.valid_versions.hi + 1)
    ]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModuleType]:
    """Kafka 4.4.0's folders compiled as they are: folder -> importable package."""
    base = tmp_path_factory.mktemp("kafka44")
    packages = {}
    for folder in FOLDERS:
        name = f"kafka44_{folder}"
        write(generate([KAFKA_44 / folder], command="compile"), base / name)
        packages[folder] = name
    sys.path.insert(0, str(base))
    try:
        yield {folder: importlib.import_module(name) for folder, name in packages.items()}
    finally:
        sys.path.remove(str(base))
        for mod in [m for m in sys.modules if m.startswith("kafka44_")]:
            del sys.modules[mod]


def _reference_codec(reference: dict[str, ModuleType], name: str, version: int):
    folder = Path(reference_specs()[name].source).parent.name
    return reference[folder].message(name, version)


@needs_kafka_44
def test_the_reference_is_the_whole_release() -> None:
    assert len(pairs()) >= 676
    assert {"message", "metadata", "other"} == {
        Path(s.source).parent.name for s in reference_specs().values()
    }


@needs_kafka_44
@pytest.mark.parametrize(("name", "version"), pairs())
def test_same_wire_format_as_kafka_44(name: str, version: int) -> None:
    ours = load_message(ROOT / "jsonschemas" / f"{name}.json")
    theirs = reference_specs()[name]
    assert ours.api_key == theirs.api_key and ours.type == theirs.type
    want, got = signature(theirs, version), signature(ours, version)
    assert want == got, f"{name} v{version}: {describe_difference(want, got)}"
    assert version not in ours.extension_versions  # a shipped version is never an extension


@needs_kafka_44
@pytest.mark.parametrize(("name", "version"), pairs())
@SETTINGS
@given(data=st.data())
def test_same_bytes_as_kafka_44(
    reference: dict[str, ModuleType], name: str, version: int, data: st.DataObject
) -> None:
    """Each drawn value on the compiled path and on the Python one."""
    mine, kafka = codec.message(name, version), _reference_codec(reference, name, version)
    value = data.draw(values(name, version))
    theirs = kafka.build(value)
    theirs_read = plain(kafka.parse(theirs))
    for path in each_codec_path(mine):
        assert mine.build(value) == theirs, f"{name} v{version} ({path}): the bytes differ"
        assert plain(mine.parse(theirs)) == theirs_read, f"{name} v{version} ({path})"
        assert mine.build(mine.parse(theirs)) == theirs, f"{name} v{version} ({path})"


@pytest.fixture(autouse=True)
def _one_settings_link_per_run() -> Iterator[None]:
    """Hypothesis's pytest plugin wraps a parametrized test's settings once per run (a parent
    link each time); over this module's thousands of runs under the CI profile, reading the
    settings walks that chain past the recursion limit. Each run starts from SETTINGS again."""
    yield
    test_same_bytes_as_kafka_44._hypothesis_internal_use_settings = SETTINGS


@needs_kafka_44
def test_api_keys_are_numbered_as_kafka_44_numbers_them() -> None:
    requests = {s.api_key: s.name for s in reference_specs().values() if s.type == "request"}
    for key, request in requests.items():
        assert codec.APIS[key].request == request, key
        assert codec.ApiKey(key).api_name == request.removesuffix("Request")
    assert requests[93] == "StreamsGroupTopologyDescriptionUpdateRequest"
    # the codec's only keys beyond 4.4.0's are extensions
    assert {k for k in codec.APIS if k not in requests} == {
        k for k, api in codec.APIS.items() if api.extension == api.versions
    }


@pytest.mark.usefixtures("codec_path")
def test_api_versions_v5_carries_cluster_id_and_node_id() -> None:
    """KIP-1242: a Kafka 4.4 client opens with ApiVersions v5, naming the cluster it expects."""
    request = codec.encode_request(
        codec.ApiKey.API_VERSIONS,
        5,
        {
            "client_software_name": "apache-kafka-java",
            "client_software_version": "4.4.0",
            "cluster_id": "MkU3OEVBNTcwNTJENDM2Qg",
            "node_id": 2,
        },
        correlation_id=1,
        client_id="c",
    )
    decoded = codec.decode_request(request)
    assert decoded.api_version == 5 and decoded.client_id == "c"
    assert (decoded.body.cluster_id, decoded.body.node_id) == ("MkU3OEVBNTcwNTJENDM2Qg", 2)
    response = codec.encode_response(
        codec.ApiKey.API_VERSIONS, 5, {"api_keys": codec.api_versions()}, correlation_id=1
    )
    body = codec.decode_response(response, codec.ApiKey.API_VERSIONS, 5).body
    assert body.error_code == codec.ErrorCode.NONE and len(body.api_keys) > 60
