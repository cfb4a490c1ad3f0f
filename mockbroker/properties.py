"""Kafka's config files: Java's properties format (java.util.Properties.load), as
`kafka-server-start.sh server.properties` reads it.

A logical line is `key=value`, `key: value` or `key value`; `#` and `!` start a comment line; a
line ending in an odd number of backslashes continues on the next (its leading blanks dropped);
`\\t`, `\\n`, `\\r`, `\\f`, `\\uXXXX` and `\\` before any other character are escapes. A key
given twice keeps its last value.
"""

from __future__ import annotations

from pathlib import Path

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_BLANKS = " \t\f"


class PropertiesError(ValueError):
    """A properties file that cannot be read (a bad \\u escape), naming the file and line."""


def parse_properties(text: str, source: str = "<properties>") -> dict[str, str]:
    """The key/value pairs of a properties text, in order."""
    out: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start = i
        line = lines[i].lstrip(_BLANKS)
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip(_BLANKS)
            i += 1
        if _continues(line):
            line = line[:-1]
        try:
            key, value = _split(line)
            out[_unescape(key)] = _unescape(value)
        except ValueError as exc:
            raise PropertiesError(f"{source}:{start + 1}: {exc}") from None
    return out


def read_properties(path: Path) -> dict[str, str]:
    """The key/value pairs of a properties file (ISO 8859-1 in Java; UTF-8 read here as well)."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return parse_properties(text, str(path))


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _split(line: str) -> tuple[str, str]:
    """Key and value: the key ends at the first unescaped `=`, `:` or blank."""
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=:" or ch in _BLANKS:
            break
        i += 1
    key, rest = line[:i], line[i:]
    rest = rest.lstrip(_BLANKS)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_BLANKS)
    return key, rest


def _unescape(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 == len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise ValueError(f"malformed \\uxxxx escape {text[i : i + 6]!r}")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)
