"""`kipwire.captures.pcap`: capture files read and written with the standard library alone.

The stable name other packages import (the mock broker's recorder writes with `PcapngWriter`;
DESIGN.md lets mockbroker import nothing else from captures). The code is in the reading stage,
`reading/pcap.py` and `reading/pcapng_writer.py`; importing this pulls in neither construct,
pyarrow nor pyspark.
"""

from __future__ import annotations

from .reading.pcap import (
    CaptureFormatError,
    FileIssue,
    Interface,
    Packet,
    PacketIndex,
    PacketRange,
    PacketReader,
    ReaderContext,
    load,
    read_packets,
    scan_index,
)
from .reading.pcapng_writer import PcapngWriter, TcpConversation

__all__ = [
    "CaptureFormatError",
    "FileIssue",
    "Interface",
    "Packet",
    "PacketIndex",
    "PacketRange",
    "PacketReader",
    "PcapngWriter",
    "ReaderContext",
    "TcpConversation",
    "load",
    "read_packets",
    "scan_index",
]
