"""The whole suite's setup: `@pytest.mark.requires("java")`, KIPWIRE_REQUIRE, and the collected
tests kept out of the garbage collector's full passes.

A test that needs a tool the machine may lack (java, go) is marked `requires(tool)` and skips
with the reason where the tool is missing, as a user's machine may; a `realkafka` test requires
java (real Kafka is a JVM, and its start can fail, not only its install). CI sets
`KIPWIRE_REQUIRE=java,go` (`.ci/run`): there such a skip is a failure, so a broken install
cannot pass as a green run that tested nothing.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator

import pytest

REQUIRE_ENV = "KIPWIRE_REQUIRE"


def required_tools() -> set[str]:
    """The tools KIPWIRE_REQUIRE names (comma-separated)."""
    return {t.strip() for t in os.environ.get(REQUIRE_ENV, "").split(",") if t.strip()}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "requires(tool): skips without `tool`; a failure instead when KIPWIRE_REQUIRE names it",
    )


def pytest_collection_finish(session: pytest.Session) -> None:
    # 7,000 collected items and their modules live until the end; left in the collector's
    # oldest generation, every full pass walks them, a pause that lands inside whatever test
    # runs then (0.2-0.5 s late in a run on a loaded machine)
    gc.freeze()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if not report.skipped:
        return
    tools = {m.args[0] for m in item.iter_markers("requires")}
    if item.get_closest_marker("realkafka"):
        tools.add("java")
    needed = tools & required_tools()
    if needed:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        reason = str(reason).removeprefix("Skipped: ")
        report.outcome = "failed"
        report.longrepr = (
            f"{REQUIRE_ENV} names {', '.join(sorted(needed))}, but the test skipped: {reason}"
        )
