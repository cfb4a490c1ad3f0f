"""Reading Kafka's schema files: JSON with `//` and `/* */` comments."""

from __future__ import annotations

import json
from typing import Any


def strip_comments(text: str) -> str:
    """Return `text` with // and /* */ comments blanked out, string literals untouched."""
    out: list[str] = []
    i, n = 0, len(text)
    start = 0
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif c == "/" and i + 1 < n and text[i + 1] == "/":
            out.append(text[start:i])
            end = text.find("\n", i)
            i = n if end < 0 else end
            start = i
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            out.append(text[start:i])
            end = text.find("*/", i + 2)
            if end < 0:
                raise ValueError("unterminated /* comment")
            # Keep newlines so json's line numbers still point at the right place.
            out.append("\n" * text.count("\n", i, end))
            i = start = end + 2
        else:
            i += 1
    out.append(text[start:])
    return "".join(out)


def loads(text: str) -> Any:
    """Parse JSON that may contain comments."""
    return json.loads(strip_comments(text))
