"""What the decode reads: input paths expanded into files, each with its kind and rotation set.

Three kinds of input: `pcap` (pcap or pcapng, by magic number or name, rotated sets such as
`tcpdump -C` writes), `tcpflow` (one file per direction, named `HOST.PORT-HOST.PORT`; both
directions of a connection become one input) and `frames` (a raw dump of size-prefixed request
frames, as `python -m kipwire.codec decode` reads; with `--pair` a request dump and the dump of
its responses). Files in a folder are recognised by content or name; `--format` forces a kind.
`check_inputs` says, one line per input, what is missing, unreadable or not a capture.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .frame_dumps import is_frame_dump, is_frame_dump_file
from .pcap import PCAP_MAGIC_NS, PCAP_MAGIC_US, PCAPNG_SHB
from .tcpflow import parse_flow_name

__all__ = [
    "KINDS",
    "CaptureFile",
    "check_inputs",
    "expand_inputs",
    "file_size",
    "input_label",
    "input_set",
    "is_remote",
    "kind_of_bytes",
    "local_path",
    "natural_key",
    "rotation_set",
    "sniff_kind",
]

KINDS = ("pcap", "tcpflow", "frames")
CAPTURE_SUFFIX = re.compile(r"\.(pcap|pcapng|cap|dmp)\d*$", re.IGNORECASE)
_MAGICS = {
    struct.pack(endian + "I", magic)
    for endian in "<>"
    for magic in (PCAP_MAGIC_US, PCAP_MAGIC_NS, PCAPNG_SHB)
}


@dataclass(frozen=True, slots=True)
class CaptureFile:
    """One input: the name as given (goes to the `file` column) and where to open it.

    `peer` is the second file of a two-file input: the other direction of a tcpflow
    connection, or the responses of a frame dump.
    """

    name: str
    path: str
    ord: int  # rotation order among all inputs (natural sort: cap, cap1, cap2, ..., cap10)
    group: int = 0  # rotation set: a connection is followed across the files of one set only
    kind: str = "pcap"
    peer: str | None = None


def natural_key(path: str) -> tuple:
    """Sort key that orders tcpdump -C names as written: cap, cap1, cap2, ..., cap10."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", path))


def rotation_set(name: str) -> tuple[str, str]:
    """Files of one rotated capture share folder and name once digits are removed.

    tcpdump -C writes cap, cap1, cap2 ...; -W numbers them cap0, cap1 ...; -G puts the time in
    the name. Separate captures in one folder (other names) never merge their connections,
    even when a 4-tuple repeats.
    """
    head, tail = os.path.split(name)
    # trailing counter (-C/-W), and long digit runs (timestamps of -G or dumpcap ring buffers);
    # short numbers in a name (v7, 01-) tell separate captures apart
    return head, re.sub(r"\d{5,}", "#", re.sub(r"\d+$", "", tail))


def local_path(given: str) -> str:
    """A local input as a path (a `file://` URI loses its scheme)."""
    return given[len("file://") :] if given.startswith("file://") else given


def is_remote(path: str) -> bool:
    """True for URIs (hdfs://, s3a://, ...) that only Spark/Hadoop can open."""
    return "://" in path and not path.startswith("file://")


def file_size(path: str) -> int:
    """Size of a file, 0 when it cannot be read."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def kind_of_bytes(name: str, data: bytes) -> str:
    """The kind of a file read elsewhere (Spark's binaryFile): magic, name, then content.

    Anything else is read as a pcap, so that its problems become rows.
    """
    if data[:4] in _MAGICS:
        return "pcap"
    if parse_flow_name(name) is not None:
        return "tcpflow"
    return "frames" if is_frame_dump(data, len(data)) else "pcap"


def input_set(name: str) -> tuple:
    """Which inputs decode together: a tcpflow connection's two files, a rotated pcap set.

    Any other file is a set of its own: two frame dumps, whose connections have the same
    stand-in addresses, never merge.
    """
    flow = parse_flow_name(name)
    if flow is not None:
        return (
            "tcpflow",
            os.path.dirname(name),
            *sorted((flow.src, flow.dst)),
            flow.vlan,
            flow.conn,
        )
    if CAPTURE_SUFFIX.search(name):
        return ("pcap", *rotation_set(name))
    return ("file", name)


def sniff_kind(path: str) -> str | None:
    """The kind of one file by its magic number, name or content; None when none fits."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError:
        return None
    if head in _MAGICS:
        return "pcap"
    if parse_flow_name(path) is not None:
        return "tcpflow"
    if is_frame_dump_file(path):
        return "frames"
    return None


def _kind_in_folder(path: Path, forced: str | None) -> str | None:
    if forced is not None:
        return forced
    if CAPTURE_SUFFIX.search(path.name):
        return "pcap"  # a damaged capture in a folder still gets its error rows
    return sniff_kind(str(path))


def check_inputs(
    inputs: Sequence[str], *, fmt: str | None = None, pairs: Sequence[Sequence[str]] = ()
) -> list[str]:
    """One line per input that is missing, unreadable or not a capture (none: all is well)."""
    problems = []
    named = [*inputs, *(p for pair in pairs for p in pair)]
    for given in named:
        if is_remote(given):
            continue
        p = Path(local_path(given))
        if not p.exists():
            problems.append(f"{given}: no such file or folder")
        elif p.is_dir():
            if not os.access(p, os.R_OK | os.X_OK):
                problems.append(f"{given}: folder not readable")
                continue
            files = [q for q in sorted(p.rglob("*")) if q.is_file()]
            found = [q for q in files if _kind_in_folder(q, fmt)]
            unreadable = [q for q in found if not os.access(q, os.R_OK)]
            problems.extend(f"{q}: not readable" for q in unreadable)
            if not found:
                problems.append(f"{given}: no capture files in this folder")
        elif not os.access(p, os.R_OK):
            problems.append(f"{given}: not readable")
        elif given in inputs and fmt is None and sniff_kind(str(p)) is None:
            problems.append(
                f"{given}: not a capture (pcap, pcapng, tcpflow stream or frame dump; "
                "--format forces one)"
            )
    return problems


def expand_inputs(
    inputs: Iterable[str], *, fmt: str | None = None, pairs: Sequence[Sequence[str]] = ()
) -> list[CaptureFile]:
    """Local inputs as files of a kind, in rotation order; tcpflow directions joined in one.

    A file named explicitly is read even when it does not look like a capture (as a pcap,
    unless `fmt` says otherwise): its problems become rows, never a silent skip.
    """
    found: list[tuple[str, str, str]] = []  # name, path, kind
    for given in inputs:
        # absolute: executors do not run in the driver's working folder
        p = Path(os.path.abspath(local_path(given)))
        if p.is_dir():
            for q in sorted(p.rglob("*")):
                kind = _kind_in_folder(q, fmt) if q.is_file() else None
                if kind:
                    found.append((os.path.join(given, str(q.relative_to(p))), str(q), kind))
        else:
            found.append((given, str(p), fmt or sniff_kind(str(p)) or "pcap"))
    files = _join_tcpflow(found)
    files += [
        (req, os.path.abspath(local_path(req)), "frames", os.path.abspath(local_path(resp)))
        for req, resp in pairs
    ]
    files.sort(key=lambda n: natural_key(n[0]))
    groups: dict[tuple[str, str], int] = {}
    out = []
    for i, (name, path, kind, peer) in enumerate(files):
        # only pcap files rotate; every other input is a set of its own
        key = rotation_set(name) if kind == "pcap" else (name, "")
        out.append(CaptureFile(name, path, i, groups.setdefault(key, len(groups)), kind, peer))
    return out


def _join_tcpflow(found: list[tuple[str, str, str]]) -> list[tuple[str, str, str, str | None]]:
    """Both directions of a tcpflow connection as one input (the first name sorts first)."""
    out: list[tuple[str, str, str, str | None]] = []
    flows: dict[tuple, list[tuple[str, str]]] = {}
    for name, path, kind in found:
        flow = parse_flow_name(name) if kind == "tcpflow" else None
        if flow is None:
            out.append((name, path, kind, None))
            continue
        ends = tuple(sorted((flow.src, flow.dst)))
        key = (os.path.dirname(name), ends, flow.vlan, flow.conn)
        flows.setdefault(key, []).append((name, path))
    for members in flows.values():
        members.sort()
        (name, path), rest = members[0], members[1:]
        out.append((name, path, "tcpflow", rest[0][1] if rest else None))
    return out


def input_label(given: str) -> str:
    """The label of an input as given: the file or folder name, never its parent's."""
    text = given.rstrip("/")
    if is_remote(text):
        text = text.split("://", 1)[1]
        return text.rsplit("/", 1)[-1] if "/" in text else ""
    return Path(local_path(text)).resolve().name
