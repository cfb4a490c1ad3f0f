"""The capture tests' kits (`captures_testkit`, `kafka_capture_kit`, `real_clients_kit`) live in
this folder and the tests in sub-folders by stage; the tests folders are no packages, so the
kits' folder goes on `sys.path` for the tests to import them by name."""

from __future__ import annotations

import sys
from pathlib import Path

KITS = str(Path(__file__).resolve().parent)
if KITS not in sys.path:
    sys.path.insert(0, KITS)
