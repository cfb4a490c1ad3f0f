"""The controller's metadata log: framed records with their offsets, as brokers fetch them."""

from __future__ import annotations

from functools import cache
from typing import Any

from construct import Container

from kipwire.codec import decode_record, encode_record
from kipwire.codec.messages import MESSAGES

# The topic brokers fetch the log from, as in Kafka.
METADATA_TOPIC = "__cluster_metadata"


class LogEntry:
    """One record of the log: offset, record name and version, decoded record, framed bytes."""

    __slots__ = ("offset", "name", "version", "record", "_data")

    def __init__(
        self, offset: int, name: str, version: int, record: Any, data: bytes | None
    ) -> None:
        self.offset = offset
        self.name = name
        self.version = version
        self.record = record
        self._data = data

    @property
    def data(self) -> bytes:
        """The framed record (frame version, api key, version, body), as brokers fetch it."""
        if self._data is None:
            # A replayed decoded record is encoded only when someone asks for its bytes.
            self._data = encode_record(self.name, self.version, self.record)
        return self._data

    def __repr__(self) -> str:
        return f"<LogEntry {self.offset} {self.name} v{self.version}>"


# Records whose fields are all scalars or lists of scalars: their decoded form is the schema
# defaults overlaid with the body, so the hot path need not decode what it just encoded.
_FLAT = frozenset(
    {
        "PartitionChangeRecord",
        "PartitionRecord",
        "ConfigRecord",
        "FeatureLevelRecord",
        "TopicRecord",
        "RemoveTopicRecord",
        "ClearElrRecord",
        "BrokerRegistrationChangeRecord",
        "FenceBrokerRecord",
        "UnfenceBrokerRecord",
        "UnregisterBrokerRecord",
    }
)


@cache
def _defaults(name: str, version: int) -> tuple[Container, tuple[str, ...]]:
    # Decoding the encoding of an empty body yields every field at its default; list defaults
    # are copied per record so no two records share one.
    record = decode_record(encode_record(name, version, {}))[2]
    return record, tuple(k for k, v in record.items() if isinstance(v, list))


def encode(name: str, version: int, body: Any) -> tuple[Any, bytes | None]:
    """A record body as the codec decodes its encoding (defaults filled, nothing the codec
    would drop), with those bytes; None for bytes not encoded yet."""
    if isinstance(body, Container) and body.keys() >= _defaults(name, version)[0].keys():
        # Already decoded at this version (a snapshot, another controller's log): it is what
        # its bytes decode to, and they are encoded when first asked for.
        return body, None
    data = encode_record(name, version, body)
    if name in _FLAT:
        defaults, lists = _defaults(name, version)
        record = Container(defaults)
        record.update(body)
        for key in lists:
            if key not in body:
                record[key] = []
    else:
        record = decode_record(data)[2]
    return record, data


def frame(offset: int, name: str, version: int, body: Any) -> LogEntry:
    """The log entry at `offset` of a record body, encoded with the codec (see `encode`)."""
    record, data = encode(name, version, body)
    return LogEntry(offset, name, version, record, data)


def latest_version(name: str) -> int:
    """The highest version of a metadata record the codec knows."""
    entry = MESSAGES.get(name)
    if entry is None or entry[1] != "metadata":
        raise ValueError(f"{name!r} is not a metadata record")
    return entry[3][1]
