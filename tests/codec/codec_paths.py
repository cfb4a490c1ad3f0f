"""Both decode paths in turn, for tests that draw a value once and check it on each path."""

from collections.abc import Iterator

from kipwire import codec
from kipwire.codec.registry import MessageCodec


def each_codec_path(message: MessageCodec) -> Iterator[str]:
    """Switch `message` to the compiled path (when built), then to the Python one; compiled
    again after. Only that codec switches: the registry's switch visits every codec made so far."""
    try:
        for path in ("compiled", "python") if codec.compiled else ("python",):
            message.use_compiled(path == "compiled")
            yield path
    finally:
        message.use_compiled(codec.compiled)
