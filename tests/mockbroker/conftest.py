"""Shared fixtures for the mock cluster's tests: one cluster per module, unique topic names."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from kipwire.mockbroker import MockCluster

_names = itertools.count()


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    """A 3-broker cluster shared by a module's tests (each test uses its own topics)."""
    with MockCluster(brokers=3) as running:
        yield running


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> str:
    """A topic name no other test uses."""
    return f"{request.node.name[:40].replace('[', '-').replace(']', '')}-{next(_names)}"
