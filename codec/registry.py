"""Message codecs as construct objects, loaded lazily from a generated package."""

from __future__ import annotations

import difflib
import importlib
import io
from types import ModuleType
from typing import Any

from construct import Construct, SizeofError

from . import _compiled
from ._paths import VersionedEncodeError
from .errors import DecodeError, UnknownMessageError, UnsupportedVersionError

_OWN_PACKAGE = "kipwire.codec.messages"


class MessageCodec(Construct):
    """The codec of one message version: a construct with precompiled parse and build code.

    The generator emits the code construct's compiler would produce, so the object is already
    compiled: `compile()` returns it unchanged, and it can be embedded in other constructs, which
    may themselves be compiled.
    """

    def __init__(self, module: ModuleType, version: int, compiled: bool = False) -> None:
        super().__init__()
        self.module = module
        self.message_name: str = module.NAME
        self.version = version
        self.flexible = module.FLEXIBLE_FROM is not None and version >= module.FLEXIBLE_FROM
        self._p = module.PARSE[version]
        self.use_compiled(compiled)
        self._b = module.BUILD[version]
        self.name = None

    def __repr__(self) -> str:
        return f"<MessageCodec {self.message_name} v{self.version}>"

    def use_compiled(self, compiled: bool) -> None:
        """Parse and build with the compiled code (when built) or with the Python code."""
        name, version = self.message_name, self.version
        python = self.module.PARSE[version]
        fast = _compiled.decoder(name, version, python) if compiled else None
        self._p = python if fast is None else fast
        for attr in ("parse", "build", "build_into"):
            self.__dict__.pop(attr, None)
        if fast is None:
            return
        # `parse`, `build` and `build_into` themselves in C: no Python frame on the way in. Each
        # hands what it cannot take to the Python method, which gives the answer or the error.
        self.parse = _compiled.decoder(name, version, self._parse_python, whole=True)
        build = _compiled.encoder(name, version, self._build_python)
        if build is not None:
            self.build = build
            self.build_into = _compiled.encoder(name, version, self._build_into_python, into=True)

    @property
    def compiled(self) -> bool:
        """True when this codec parses with the compiled decoder."""
        return self._p is not self.module.PARSE[self.version]

    def parse(self, data: bytes | bytearray | memoryview, **contextkw: Any) -> Any:
        """Decode exactly one message from `data`; trailing bytes are a DecodeError."""
        value, end = self._p(data, 0)
        if end != len(data):
            raise DecodeError(f"{len(data) - end} bytes follow the message", offset=end)
        return value

    def _parse_python(self, data: bytes | bytearray | memoryview, **contextkw: Any) -> Any:
        """`parse` on the Python parser: the compiled `parse` falls back to it."""
        value, end = self.module.PARSE[self.version](data, 0)
        if end != len(data):
            raise DecodeError(f"{len(data) - end} bytes follow the message", offset=end)
        return value

    def parse_at(self, data: bytes | bytearray | memoryview, offset: int) -> tuple[Any, int]:
        """Decode one message starting at `offset`; return it and the offset after it."""
        return self._p(data, offset)

    def build(self, obj: Any, **contextkw: Any) -> bytes:
        """Encode a dict (omitted keys take their defaults) into bytes."""
        return self._build_python(obj)

    def build_into(self, obj: Any, out: bytearray) -> None:
        """Append the encoding of `obj` to `out` (no intermediate copy)."""
        self._build_into_python(obj, out)

    def _build_python(self, obj: Any, **contextkw: Any) -> bytes:
        """`build` on the Python builder: the compiled `build` falls back to it."""
        w = bytearray()
        try:
            self._b(obj, w)
        except VersionedEncodeError as e:
            raise e.in_version(self.version) from None
        return bytes(w)

    def _build_into_python(self, obj: Any, out: bytearray) -> None:
        """`build_into` on the Python builder: the compiled `build_into` falls back to it."""
        try:
            self._b(obj, out)
        except VersionedEncodeError as e:
            raise e.in_version(self.version) from None

    def compile(self, filename: str | None = None) -> MessageCodec:
        """Already compiled: the generator emitted this codec's parse and build code."""
        return self

    def _parse(self, stream: Any, context: Any, path: Any) -> Any:
        start = stream.tell()
        data = stream.read()
        value, end = self._p(data, 0)
        stream.seek(start + end)
        return value

    def _build(self, obj: Any, stream: Any, context: Any, path: Any) -> Any:
        stream.write(self.build(obj))
        return obj

    def _sizeof(self, context: Any, path: Any) -> int:
        raise SizeofError("a Kafka message has no fixed size", path=path)

    def _emitparse(self, code: Any) -> str:
        code.append(f"from {__name__} import parse_stream as _kipwire_parse_stream")
        return f"_kipwire_parse_stream(io, {self.module.__name__!r}, {self.version})"

    def _emitbuild(self, code: Any) -> str:
        code.append(f"from {__name__} import build_stream as _kipwire_build_stream")
        return f"_kipwire_build_stream(obj, io, {self.module.__name__!r}, {self.version})"


def parse_stream(stream: io.BufferedIOBase, module: str, version: int) -> Any:
    """Parse one message from a stream (used by construct-compiled code embedding a message)."""
    return MessageCodec(importlib.import_module(module), version)._parse(stream, None, None)


def build_stream(obj: Any, stream: io.BufferedIOBase, module: str, version: int) -> Any:
    """Build one message into a stream (used by construct-compiled code embedding a message)."""
    stream.write(MessageCodec(importlib.import_module(module), version).build(obj))
    return obj


def _unknown_message(name: object, known: dict[str, tuple]) -> str:
    """'unknown message ...', naming the messages the caller may have meant."""
    text = str(name)
    lowered = text.lower()
    close = [n for n in sorted(known) if lowered and n.lower().startswith(lowered)][:4]
    close += [n for n in difflib.get_close_matches(text, known, n=3) if n not in close]
    hint = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
    return f"unknown message {name!r}{hint}"


class Registry:
    """Finds and caches message codecs of one generated package."""

    def __init__(self, package: str, messages: dict[str, tuple]) -> None:
        self.package = package
        self.messages = messages
        self._codecs: dict[tuple[str, int], MessageCodec] = {}
        self._modules: dict[str, ModuleType] = {}
        # The compiled decoders are generated for kipwire's own messages only.
        self._compiled = _compiled.active and package == _OWN_PACKAGE

    def use_compiled(self, compiled: bool) -> None:
        """Switch every codec of the package to the compiled path (when built) or the Python one.

        For tests and benchmarks that compare the two paths; the compiled path is the default.
        """
        self._compiled = compiled and _compiled.active and self.package == _OWN_PACKAGE
        for codec in self._codecs.values():
            codec.use_compiled(self._compiled)

    def module(self, name: str) -> ModuleType:
        """The generated module of a message, imported on first use."""
        module = self._modules.get(name)
        if module is None:
            try:
                entry = self.messages[name]
            except (KeyError, TypeError):  # TypeError: an unhashable name
                raise UnknownMessageError(_unknown_message(name, self.messages)) from None
            module = self._modules[name] = importlib.import_module(f"{self.package}.{entry[0]}")
        return module

    def message(self, name: str, version: int) -> MessageCodec:
        """The codec of message `name` at `version`."""
        key = (name, version)
        codec = self._codecs.get(key)
        if codec is None:
            module = self.module(name)
            if not isinstance(version, int):
                raise TypeError(f"a message version is an int, got {type(version).__name__}")
            if version not in module.PARSE:
                span = module.VERSIONS
                raise UnsupportedVersionError(
                    f"{name} has no version {version}"
                    + (f" (versions {span[0]}-{span[1]})" if span else " (no versions)")
                )
            codec = self._codecs[key] = MessageCodec(module, version, self._compiled)
        return codec
