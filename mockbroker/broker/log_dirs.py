"""A broker's log directory and its CleanShutdownFile (KIP-966, kip-rules D.18).

Kafka's LogManager writes `.kafka_cleanshutdown` holding the broker epoch on a clean stop and
deletes it while loading; the restarted broker sends that epoch as PreviousBrokerEpoch, or -1
when the file is missing or unreadable. Without `log.dirs` the directory is in memory.
"""

from __future__ import annotations

import json
from pathlib import Path

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
NO_EPOCH = -1


class LogDirs:
    """One log directory per broker: in memory, or `<log.dirs>/broker-<id>` on disk."""

    def __init__(self, base: str | None, node_id: int) -> None:
        self.path = Path(base) / f"broker-{node_id}" if base else None
        self._memory: dict[str, str] = {}

    def write_clean_shutdown(self, broker_epoch: int) -> None:
        """Write the CleanShutdownFile: `{"version":0,"BrokerEpoch":N}`."""
        text = json.dumps({"version": 0, "BrokerEpoch": broker_epoch}, separators=(",", ":"))
        if self.path is None:
            self._memory[CLEAN_SHUTDOWN_FILE] = text
            return
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / CLEAN_SHUTDOWN_FILE).write_text(text)

    def clean_shutdown_text(self) -> str | None:
        """The CleanShutdownFile's content, or None when there is none."""
        if self.path is None:
            return self._memory.get(CLEAN_SHUTDOWN_FILE)
        file = self.path / CLEAN_SHUTDOWN_FILE
        return file.read_text() if file.is_file() else None

    def take_previous_epoch(self) -> int:
        """The epoch of the last clean shutdown (-1 if none), deleting the file as Kafka does."""
        text = self.clean_shutdown_text()
        if self.path is None:
            self._memory.pop(CLEAN_SHUTDOWN_FILE, None)
        elif text is not None:
            (self.path / CLEAN_SHUTDOWN_FILE).unlink()
        if text is None:
            return NO_EPOCH
        try:
            content = json.loads(text)
            epoch = content["BrokerEpoch"]
        except (ValueError, KeyError, TypeError):
            return NO_EPOCH
        return epoch if isinstance(epoch, int) and content.get("version") == 0 else NO_EPOCH
