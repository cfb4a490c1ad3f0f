"""pytest plugin (entry point `pytest11`): `mock_cluster` and `trio_mock_cluster` fixtures.

Configure a test's cluster with `@pytest.mark.mock_cluster(brokers=1, config={...})`; the
keyword arguments are those of `MockCluster`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from .cluster import Cluster, open_cluster
from .processes import open_process_cluster
from .sync_cluster import MockCluster


def pytest_configure(config: pytest.Config) -> None:
    """Declare the marker so `--strict-markers` accepts it; the trio fixture, or its absence."""
    config.addinivalue_line(
        "markers", "mock_cluster(**kwargs): arguments for the mock_cluster fixtures"
    )
    # pytest itself runs no async fixture: without pytest-trio, say which package is missing
    # instead of pytest's generic message
    trio = config.pluginmanager.has_plugin("trio")
    config.pluginmanager.register(TrioFixture() if trio else NoTrio(), "kipwire-trio-fixture")


def _options(request: pytest.FixtureRequest) -> dict[str, Any]:
    marker = request.node.get_closest_marker("mock_cluster")
    if marker is None:
        return {}
    if marker.args:
        raise pytest.UsageError("mock_cluster(...) takes keyword arguments only")
    return dict(marker.kwargs)


@pytest.fixture
def mock_cluster(request: pytest.FixtureRequest) -> Iterator[MockCluster]:
    """A running `MockCluster` (3 brokers unless the marker says otherwise)."""
    with MockCluster(**_options(request)) as cluster:
        yield cluster


class TrioFixture:
    """`trio_mock_cluster` where pytest-trio runs async fixtures."""

    @pytest.fixture
    async def trio_mock_cluster(self, request: pytest.FixtureRequest) -> AsyncIterator[Cluster]:
        """A running trio `Cluster` for pytest-trio tests (`processes=True`: a `ProcessCluster`)."""
        options = _options(request)
        opener = open_process_cluster if options.pop("processes", False) else open_cluster
        async with opener(**options) as cluster:
            yield cluster


class NoTrio:
    """`trio_mock_cluster` without pytest-trio: a usage error that names the package."""

    @pytest.fixture
    def trio_mock_cluster(self) -> Cluster:
        """Refuse: async fixtures need pytest-trio."""
        raise pytest.UsageError(
            "trio_mock_cluster needs the pytest-trio plugin: pip install 'kipwire[pytest]' "
            "(or pytest-trio), and mark the test @pytest.mark.trio"
        )
