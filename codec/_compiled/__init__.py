"""The compiled codec path: C decoders and encoders generated from the same schemas as
`codec.messages`.

`python -m kipwire.generator build` writes `shard_*.c` beside this file; installing kipwire compiles
them when a C compiler is present (setup.py). A shard whose digest differs from `_manifest.py` was
built from other sources: it is stale, and then no shard is used. `KIPWIRE_PURE_PYTHON=1` keeps
the Python path. A compiled decoder gives the same values as the Python parser and, on anything it
cannot read, hands the input to that parser, which raises the DecodeError; a compiled encoder
writes the same bytes as the Python builder and hands it any value it does not take as it is.
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ._manifest import SHARDS

PURE_PYTHON = os.environ.get("KIPWIRE_PURE_PYTHON", "") not in ("", "0")


def _load() -> dict[str, ModuleType]:
    """Message name -> its shard, when every shard is built and current; else empty."""
    if PURE_PYTHON:
        return {}
    by_message: dict[str, ModuleType] = {}
    stale = []
    for name, (digest, messages) in SHARDS.items():
        try:
            shard = importlib.import_module(f"{__name__}.{name}")
        except ImportError:
            return {}
        if digest != shard.DIGEST:
            stale.append(name)
        by_message.update(dict.fromkeys(messages, shard))
    if stale:
        warnings.warn(
            f"kipwire's compiled codec is stale ({', '.join(stale)}); the pure-Python path is in"
            " use until it is rebuilt (`pip install -e .` or `make`)",
            RuntimeWarning,
            stacklevel=2,
        )
        return {}
    return by_message


_SHARD_OF = _load()
#: True when the compiled decoders are built, current and not switched off.
active = bool(_SHARD_OF)


def decoder(
    message: str, version: int, fallback: Callable, whole: bool = False
) -> Callable[..., Any] | None:
    """The compiled parser of `message` at `version`, or None.

    It takes `(data, offset)` and returns `(value, end)` as a generated Python parser does; with
    `whole`, it takes `data` and returns the value of a message that fills it exactly. Anything
    else (other arguments, input it cannot read) goes to `fallback` with the same arguments.
    """
    shard = _SHARD_OF.get(message)
    return None if shard is None else shard.decoder(message, version, fallback, whole)


def encoder(
    message: str, version: int, fallback: Callable, into: bool = False
) -> Callable[..., Any] | None:
    """The compiled builder of `message` at `version`, or None.

    It takes a value and returns its bytes, as `MessageCodec.build` does; with `into`, it takes
    `(value, out)` and appends them to the bytearray `out`. Anything else (other arguments, a value
    it does not take as it is) goes to `fallback` with the same arguments.
    """
    shard = _SHARD_OF.get(message)
    return None if shard is None else shard.encoder(message, version, fallback, into)
