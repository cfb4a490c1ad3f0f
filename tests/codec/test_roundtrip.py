"""Round trip for every message and every version: build -> parse gives the value back (defaults
filled), and parse -> build gives the bytes back exactly, unknown tagged fields included."""

from __future__ import annotations

import os

import pytest
from codec_strategies import expected, plain, values, versions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kipwire import codec

ALL = sorted(codec.MESSAGES)
# Four examples per version here; the same versions meet about 15 more drawn values in the
# compiled-path, JSON, kafka-python and Kafka 4.4 tests (make test-deep: 30 here).
SETTINGS = settings(
    max_examples=int(os.environ.get("KIPWIRE_EXAMPLES", "4")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def check_round_trip(name: str, version: int, value: dict) -> None:
    m = codec.message(name, version)
    data = m.build(value)
    parsed = m.parse(data)
    assert plain(parsed) == expected(name, version, value), f"{name} v{version}"
    assert m.build(parsed) == data, f"{name} v{version}: parse -> build changed the bytes"


@pytest.mark.parametrize("name", ALL)
@SETTINGS
@given(data=st.data())
def test_round_trip(name: str, data: st.DataObject) -> None:
    for version in versions(name):
        value = data.draw(values(name, version), label=f"v{version}")
        check_round_trip(name, version, value)


@pytest.mark.parametrize("name", ALL)
def test_all_defaults(name: str) -> None:
    """An empty dict builds in every version (every field takes its default) and parses back."""
    for version in versions(name):
        check_round_trip(name, version, {})


def test_every_message_is_covered() -> None:
    assert len(ALL) >= 200
    assert sum(len(versions(n)) for n in ALL) > 700
