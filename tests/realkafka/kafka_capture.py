"""Recording a real cluster's loopback traffic with tcpdump, through tests/captures' own wrapper
(`real_clients_kit.Tcpdump`: ready on "listening on", flushed by a marker datagram, and an
`IncompleteCapture` when the kernel dropped packets)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

CAPTURES_TESTS = Path(__file__).parents[1] / "captures"


def tcpdump_kit() -> ModuleType:
    """tests/captures/real_clients_kit.py, loaded by path (the tests folders are no package)."""
    name = "real_clients_kit"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, CAPTURES_TESTS / f"{name}.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {CAPTURES_TESTS / name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@dataclass
class Recording:
    """The pcap of a `record()` block, or why there is none."""

    path: Path | None = None
    missing: str = ""


@contextmanager
def record(path: Path, ports: list[int]) -> Iterator[Recording]:
    """tcpdump on `ports` for the block; a Recording without a path when it could not capture."""
    kit = tcpdump_kit()
    result = Recording()
    try:
        dump = kit.Tcpdump(path, ports).start()
    except kit.CaptureUnavailable as e:
        result.missing = str(e)
        yield result
        return
    try:
        yield result
    finally:
        try:
            result.path = dump.stop()
        except kit.IncompleteCapture as e:
            result.missing = f"tcpdump lost packets: {e}"
        except TimeoutError as e:
            result.missing = f"tcpdump did not flush: {e}"
