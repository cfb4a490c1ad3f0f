"""Both decode paths in turn, for tests that draw a value once and check it on each path."""

from collections.abc import Iterator

from kipwire import codec
from kipwire.codec.messages import registry


def each_codec_path() -> Iterator[str]:
    """Switch to the compiled path (when built), then to the Python one; compiled again after."""
    try:
        for path in ("compiled", "python") if codec.compiled else ("python",):
            registry.use_compiled(path == "compiled")
            yield path
    finally:
        registry.use_compiled(True)
