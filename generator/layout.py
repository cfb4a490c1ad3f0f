"""Lays out Python literals of generated code so that lines stay within the line length."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

WIDTH = 100


@dataclass
class Group:
    """A bracketed list of items (source strings or Groups) that wraps when it is too long.

    `fill` packs as many items on each wrapped line as fit (short atoms such as a field's
    attributes); otherwise a wrapped group puts one item per line.
    """

    open: str
    items: list[str | Group]
    close: str
    fill: bool = False
    one_tuple: bool = False

    def flat(self) -> str:
        """The group on one line."""
        inner = ", ".join(flat_text(i) for i in self.items)
        return self.open + inner + ("," if self.one_tuple else "") + self.close


def flat_text(item: str | Group) -> str:
    """The item on one line."""
    return item if isinstance(item, str) else item.flat()


def render(item: str | Group, indent: int = 0, prefix: str = "", suffix: str = "") -> str:
    """Source for `item`, starting after `prefix` at column `indent`, followed by `suffix`."""
    flat = prefix + flat_text(item) + suffix
    if isinstance(item, str) or indent + len(flat) <= WIDTH or not item.items:
        return flat
    pad = " " * (indent + 4)
    lines = [prefix + item.open]
    line = ""
    for i in item.items:
        if item.fill and (isinstance(i, str) or len(pad + i.flat()) < WIDTH):
            piece = f"{flat_text(i)},"
            if line and len(line) + 1 + len(piece) > WIDTH:
                lines.append(line)
                line = ""
            line = f"{line} {piece}" if line else pad + piece
            continue
        if line:
            lines.append(line)
            line = ""
        lines.append(pad + render(i, indent + 4, "", ","))
    if line:
        lines.append(line)
    lines.append(" " * indent + item.close + suffix)
    return "\n".join(lines)


def literal_group(obj: Any) -> str | Group:
    """A filling Group for a tuple, list, dict or frozenset of literals; repr for anything else."""
    if isinstance(obj, tuple):
        return Group("(", [literal_group(x) for x in obj], ")", True, one_tuple=len(obj) == 1)
    if isinstance(obj, list):
        return Group("[", [literal_group(x) for x in obj], "]", True)
    if isinstance(obj, frozenset):
        if not obj:
            return "frozenset()"
        return Group("frozenset({", [repr(x) for x in sorted(obj)], "})", True)
    if isinstance(obj, dict):
        items: list[str | Group] = []
        for k, v in obj.items():
            inner = literal_group(v)
            items.append(keyed(f"{k!r}: ", inner))
        return Group("{", items, "}", True)
    return repr(obj)


def keyed(key: str, item: str | Group) -> str | Group:
    """`key` followed by `item` (a dict entry), the key carried by a group's opening bracket."""
    if isinstance(item, str):
        return key + item
    return Group(key + item.open, item.items, item.close, item.fill, item.one_tuple)


def wrap_call(line: str) -> str:
    """A statement longer than the line length with its outermost call's arguments wrapped.

    `x = f(a, b)` becomes `x = f(` / `a, b` / `)` on three lines (one argument a line when
    they do not fit on one); a line with no call to wrap is returned as it is.
    """
    if len(line) <= WIDTH or line.lstrip().startswith("#"):
        return line
    indent = line[: len(line) - len(line.lstrip(" "))]
    spans = _bracket_spans(line)
    calls = [(o, c) for o, c in spans if line[o] == "(" and o > 0 and line[o - 1] not in " ("]
    if not calls:
        return line
    open_, close = max(calls, key=lambda oc: oc[1] - oc[0])
    args = _split_args(line[open_ + 1 : close])
    pad = indent + "    "
    one = pad + ", ".join(args)
    middle = [one] if len(one) <= WIDTH else [pad + a + "," for a in args]
    head = [line[: open_ + 1]]
    if len(head[0]) > WIDTH and " = " in head[0]:
        # Many targets unpacked from one call: the targets go in parentheses of their own.
        targets, call = head[0].split(" = ", 1)
        head = [indent + "(", pad + ", ".join(_split_args(targets)) + ",", indent + ") = " + call]
    return "\n".join([*head, *middle, indent + line[close:]])


def _bracket_spans(line: str) -> list[tuple[int, int]]:
    """(open, close) offsets of every bracket pair outside string literals."""
    spans, stack, quote = [], [], ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote and line[i - 1] != "\\":
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            stack.append(i)
        elif ch in ")]}" and stack:
            spans.append((stack.pop(), i))
    return spans


def _split_args(text: str) -> list[str]:
    """Split at the commas outside brackets and string literals."""
    args, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(text[start:i].strip())
            start = i + 1
    args.append(text[start:].strip())
    return [a for a in args if a]
