"""Fixtures for the client's tests: a one-broker mock cluster to talk to."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kipwire.mockbroker import MockCluster


@pytest.fixture(scope="module")
def broker() -> Iterator[str]:
    """The address of the one broker of a mock cluster shared by a module's tests."""
    with MockCluster(brokers=1) as running:
        yield running.bootstrap_servers
