"""The generated index: per API, the facts a broker needs for its ApiVersions answer."""

from __future__ import annotations

from pathlib import Path

from kipwire.codec import ApiKey
from kipwire.codec.messages import APIS, Api
from kipwire.generator.jsonc import loads
from kipwire.generator.versions import OPEN, Versions

ROOT = Path(__file__).resolve().parents[2]


def _schema(name: str) -> dict:
    return loads((ROOT / "jsonschemas" / f"{name}.json").read_text(encoding="utf-8"))


def test_every_api_carries_its_schema_facts() -> None:
    assert len(APIS) > 80
    for key, api in APIS.items():
        doc = _schema(api.request)
        assert isinstance(api, Api) and doc["apiKey"] == key
        valid = Versions.parse(doc["validVersions"])
        assert api.versions == (valid.lo, valid.hi)
        assert api.listeners == tuple(doc["listeners"])
        unstable = (valid.hi,) if doc.get("latestVersionUnstable") else ()
        assert api.unstable == unstable, api.name
        dep = Versions.parse(doc.get("deprecatedVersions", "none"))
        expected = None if dep.empty else (dep.lo, valid.hi if dep.hi == OPEN else dep.hi)
        assert api.deprecated == expected, api.name
        ext = Versions.parse(doc.get("extensionVersions", "none"))
        assert api.extension == (None if ext.empty else (ext.lo, ext.hi)), api.name


def test_index_entries_read_by_name_and_by_position() -> None:
    fetch = APIS[ApiKey.FETCH]
    assert fetch.name == "Fetch" and fetch[0] == "Fetch"
    assert fetch[1:3] == ("FetchRequest", "FetchResponse")
    assert "controller" in fetch.listeners and "broker" in fetch.listeners
    assert fetch.deprecated is not None and fetch.deprecated[0] == 0
    assert {x for api in APIS.values() for x in api.listeners} == {
        "broker",
        "controller",
        "zkBroker",
    }
    assert any(api.unstable for api in APIS.values())
