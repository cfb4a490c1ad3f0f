"""Emits `_enums.py`: ApiKey, ErrorCode and the protocol's other numbered values as enums."""

from __future__ import annotations

import textwrap
from pathlib import Path

from .emit_module import header
from .layout import WIDTH, literal_group, render
from .spec import MessageSpec, snake_case


def _enum_name(name: str) -> str:
    return snake_case(name).upper()


def enums_module(
    specs: list[MessageSpec],
    table: dict[int, tuple[str, str, str | None]],
    errors_tsv: Path | None,
    enums_tsv: Path | None,
    command: str,
) -> str:
    """The `_enums.py` module: ApiKey from the API table (key -> names), ErrorCode, enums.tsv."""
    lines = [
        header(command)
        + '"""API keys, error codes and the protocol\'s other numbered values as enums."""',
        "",
        "from enum import IntEnum, StrEnum",
        "",
        "",
        "class ApiKey(IntEnum):",
        '    """Kafka API keys, named after their request (FETCH = 1)."""',
        "",
    ]
    for key, (api, _req, _resp) in table.items():
        lines.append(f"    {_enum_name(api)} = {key}")
    # Older names of a renamed API stay as enum aliases.
    for s in specs:
        if s.type == "request" and s.api_key is not None and table[s.api_key][1] != s.name:
            lines.append(f"    {_enum_name(s.name.removesuffix('Request'))} = {s.api_key}")
    lines += [
        "",
        "    @property",
        "    def api_name(self) -> str:",
        '        """The API\'s name as Kafka writes it (`Fetch`, `DescribeTopicPartitions`)."""',
        "        return _API_NAMES[self.value]",
        "",
        "",
        "_API_NAMES = {",
    ]
    for key, (api, _req, _resp) in table.items():
        lines.append(f"    {key}: {api!r},")
    lines += ["}", ""]
    if errors_tsv is not None:
        rows = [
            r.split("\t")[:3] for r in errors_tsv.read_text(encoding="utf-8").splitlines()[1:] if r
        ]
        lines += [
            "",
            "class ErrorCode(IntEnum):",
            '    """Kafka error codes; `.retriable` says whether a client may retry."""',
            "",
        ]
        for code, name, _retriable in rows:
            lines.append(f"    {name} = {int(code)}")
        retriable = sorted(int(c) for c, _n, r in rows if r.strip() == "true")
        lines += [
            "",
            "    @property",
            "    def retriable(self) -> bool:",
            '        """True when Kafka marks the error retriable."""',
            "        return self.value in _RETRIABLE",
            "",
            "",
            render(literal_group(frozenset(retriable)), 0, "_RETRIABLE = "),
        ]
    if enums_tsv is not None:
        lines += _wire_enums(enums_tsv)
    return "\n".join(lines) + "\n"


def _wire_enums(enums_tsv: Path) -> list[str]:
    """Classes for enums.tsv (enum, member, value, note): a `-` member row gives the docstring."""
    rows = [r.split("\t") for r in enums_tsv.read_text(encoding="utf-8").splitlines()[1:] if r]
    lines: list[str] = []
    for enum, member, value, note in ((*r, "")[:4] for r in rows):
        if member == "-":
            kind = (
                "StrEnum" if any(x[0] == enum and x[2].startswith('"') for x in rows) else "IntEnum"
            )
            doc = textwrap.wrap(f'"""{note[:1].upper()}{note[1:]}."""', WIDTH - 4)
            lines += ["", "", f"class {enum}({kind}):", *(f"    {d}" for d in doc), ""]
            continue
        comment = f"  # {note}" if note else ""
        literal = value if value.startswith('"') else str(int(value))
        lines.append(f"    {member} = {literal}{comment}")
    return lines
