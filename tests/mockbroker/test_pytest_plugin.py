"""The pytest plugin: `mock_cluster`, `trio_mock_cluster` and the `mock_cluster` marker."""

from __future__ import annotations

pytest_plugins = ["pytester"]

TESTS = """
import pytest
import trio
from kipwire.mockbroker import MockCluster


def test_default_cluster(mock_cluster):
    assert isinstance(mock_cluster, MockCluster)
    assert len(mock_cluster.bootstrap_servers.split(",")) == 3


@pytest.mark.mock_cluster(brokers=1, config={"num.partitions": 4})
def test_marker_configures(mock_cluster):
    assert len(mock_cluster.bootstrap_servers.split(",")) == 1
    mock_cluster.create_topic("t", partitions=2)
    assert mock_cluster.partition("t", 1).leader == 1


@pytest.mark.trio
@pytest.mark.mock_cluster(brokers=2)
async def test_trio_cluster(trio_mock_cluster):
    await trio_mock_cluster.create_topic("t", partitions=2, replication_factor=2)
    assert trio_mock_cluster.partition("t", 0).replicas
    assert len(trio_mock_cluster.bootstrap_servers.split(",")) == 2
"""


def test_fixtures_and_marker(pytester):
    pytester.makepyfile(TESTS)
    # the plugin loads through its pytest11 entry point, as in any project that installs kipwire
    result = pytester.runpytest_subprocess("--strict-markers", "-q")
    result.assert_outcomes(passed=3)


def test_without_pytest_trio_the_trio_fixture_names_the_package(pytester):
    pytester.makepyfile(TESTS)
    result = pytester.runpytest_subprocess("-p", "no:trio", "-q", "-k", "trio_cluster")
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        ["*trio_mock_cluster needs the pytest-trio plugin*kipwire[[]pytest[]]*"]
    )
