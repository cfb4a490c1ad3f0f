"""What a decoded body says: the facts its `pdus` row keeps, and its JSON text.

The facts are the first error code, the topic names, the record count (from batch headers),
whether the body carries record batches, and topic ids. The JSON is `codec.to_json` of the body
with every `records` blob replaced by its decoded batches. For kipwire's own codec one walk of
the body gives both (`facts_and_json`): every field of every PDU passes through here, so the
separate scan, conversion and records pass (with a base64 round trip per blob) were a top cost
of the decode. `facts` and `body_json` are the same answers for any other decoder.

With the compiled codec active, `facts_and_json` and `body_json` run in C for kipwire's own codec
(`codec/_compiled/jsontext.c`, loaded by `decoding.jsontext`): the same facts and the same text,
written without the intermediate tree; the Python code below answers for any body the C walk
hands back.
"""

from __future__ import annotations

import base64
import json
import struct
from typing import Any
from uuid import UUID

from kipwire import codec as _own_codec
from kipwire.codec import ErrorCode
from kipwire.codec.records import expand_records

from . import jsontext

__all__ = [
    "Facts",
    "body_json",
    "count_records",
    "error_text",
    "facts",
    "facts_and_json",
    "frame_decoder",
    "use_compiled",
]

Facts = tuple[int | None, list[str] | None, int | None, bool, list[str] | None]
NO_FACTS: Facts = (None, None, None, False, None)

_i32 = struct.Struct(">i").unpack_from
_BLOB = (bytes, bytearray, memoryview)
_MAX_SCAN_DEPTH = 6  # containers nested deeper hold no fact a row keeps
# the exact types codec.to_json returns as they are (its own `_SAME`)
_SAME = frozenset({str, int, float, bool, type(None)})


def error_text(exc: Exception) -> str:
    """An exception as the text a row's error column holds."""
    return f"{type(exc).__name__}: {exc}"[:2000]


_NATIVE = jsontext.load(error_text)
# The C walk in use (None: the Python one); `use_compiled` switches.
_native = _NATIVE


def use_compiled(compiled: bool) -> None:
    """Walk bodies with the C code (when built) or the Python code, for tests and benchmarks."""
    global _native
    _native = _NATIVE if compiled else None


def _native_for(decoder: Any, expanding: bool) -> Any:
    """The C walk when it answers for `decoder`: kipwire's own codec and its own expander."""
    if _native is None or decoder is not _own_codec:
        return None
    if expanding and records_expander(decoder) is not expand_records:
        return None
    return _native


def frame_decoder(decoder: Any) -> Any:
    """The C call that decodes a whole frame into its `pdus` row (`decode_frame`, see
    `jsontext.py`) when the C walk answers for `decoder`'s bodies; else None."""
    native = _native_for(decoder, True)
    return None if native is None else native.decode_frame


def count_records(blob: bytes | memoryview | None) -> int | None:
    """Records in a record-batch blob, from batch headers only; None if they cannot be counted.

    v2 batches carry their record count; legacy (v0/v1) message sets count one record per
    message, and a compressed legacy wrapper hides its count (None). A batch cut at the end, as
    fetch responses do, is not counted.
    """
    if blob is None:
        return None
    n = len(blob)
    pos, total = 0, 0
    while pos + 17 <= n:
        (length,) = _i32(blob, pos + 8)
        end = pos + 12 + length
        if length < 0 or end > n:
            break
        magic = blob[pos + 16]
        if magic == 2:
            if pos + 61 > n:
                break
            total += _i32(blob, pos + 57)[0]
        else:
            if pos + 22 > n or blob[pos + 21] & 0x07:
                return None
            total += 1
        pos = end
    return total


class _Acc:
    """What the walk has found so far."""

    __slots__ = ("first_err", "topics", "seen", "ids", "seen_ids", "records", "seen_records")

    def __init__(self) -> None:
        self.first_err: int | None = None
        self.topics: list[str] = []
        self.seen: set[str] = set()  # the topics, for a quick membership test
        self.ids: list[str] = []  # topic ids (Fetch v13+ names topics by id alone)
        self.seen_ids: set[str] = set()
        self.records: int | None = None
        self.seen_records = False

    def facts(self, body: dict) -> Facts:
        """The facts of `body` once it has been walked: a top-level error code comes first."""
        top = body.get("error_code")
        err = top if isinstance(top, int) else self.first_err
        return err, (self.topics or None), self.records, self.seen_records, (self.ids or None)

    def topic_list(self, items: list) -> None:
        """Note the names and ids of the items of a topic list, in order."""
        for item in items:
            if isinstance(item, dict):
                name = item.get("name", item.get("topic", item.get("topic_name")))
                if isinstance(name, str) and name not in self.seen:
                    self.seen.add(name)
                    self.topics.append(name)
                tid = item.get("topic_id")
                if isinstance(tid, UUID) and tid.int and str(tid) not in self.seen_ids:
                    self.seen_ids.add(str(tid))
                    self.ids.append(str(tid))

    def error_code(self, v: Any) -> None:
        """The first error code seen, or the first that is not NONE after NONE."""
        if isinstance(v, int) and (
            self.first_err is None or (self.first_err == ErrorCode.NONE and v != ErrorCode.NONE)
        ):
            self.first_err = v

    def blob(self, v: bytes | bytearray | memoryview) -> None:
        """A `records` blob: count its records."""
        self.seen_records = True
        c = count_records(v)
        if c is not None:
            self.records = (self.records or 0) + c


def facts(body: Any) -> Facts:
    """error_code, topic names, record count, whether it has records, topic ids of a body."""
    if not isinstance(body, dict):
        return NO_FACTS
    acc = _Acc()
    _scan(body, 0, acc)
    return acc.facts(body)


def _scan(value: Any, depth: int, acc: _Acc) -> None:
    """Visit every field of a decoded body depth-first (to depth 6), noting what `facts` needs."""
    if depth > _MAX_SCAN_DEPTH:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, dict):
                _scan(v, depth + 1, acc)
            elif isinstance(v, list):
                if "topic" in k or k == "responses":
                    acc.topic_list(v)
                _scan(v, depth + 1, acc)
            elif k == "error_code":
                acc.error_code(v)
            elif k == "records" and isinstance(v, _BLOB):
                acc.blob(v)
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, (dict, list)):
                _scan(v, depth + 1, acc)


# json.dumps with non-default options builds a new encoder per call; one is enough. The C
# encoder is made once too (JSONEncoder.encode makes one per call); the trees are acyclic.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_ENCODE = _ENCODER.encode
_make = json.encoder.c_make_encoder
_C_ENCODE = (
    None
    if _make is None
    else _make(None, _ENCODER.default, json.encoder.encode_basestring, None, ":", ",", *(0, 0, 1))
)


def encode(tree: Any) -> str:
    """`tree` as compact JSON text, non-ASCII characters as they are."""
    if _C_ENCODE is None:
        return _ENCODE(tree)
    return "".join(_C_ENCODE(tree, 0))


def _expand(tree: Any, expand: Any) -> None:
    """Replace base64 `records` blobs in a to_json tree with their decoded batches, in place."""
    stack = [tree]
    while stack:
        node = stack.pop()
        failed = []
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for k, v in items:
            if k == "records" and isinstance(v, str) and v:
                try:
                    node[k] = expand(base64.b64decode(v))
                except Exception as exc:  # noqa: BLE001 - keep the raw blob and say why
                    failed.append(error_text(exc))
            elif isinstance(v, (dict, list)):
                stack.append(v)
        if failed:
            node["records_error"] = failed[0]  # after the walk: the dict is not resized in it


def records_expander(decoder: Any) -> Any:
    """codec.records.expand_records when the codec has it (only the real codec does)."""
    records = getattr(decoder, "records", None)
    if records is None and getattr(decoder, "__name__", "") == "kipwire.codec":
        try:
            from kipwire.codec import records
        except ImportError:
            return None
    return getattr(records, "expand_records", None)


def body_json(decoder: Any, body: Any, has_records: bool) -> str:
    """The JSON text of `body` as `decoder.to_json` gives it, its record batches decoded."""
    native = _native_for(decoder, has_records)
    if native is not None:
        text = native.body_json(body, has_records)
        if text is not None:
            return text
    tree = decoder.to_json(body)
    expand = records_expander(decoder) if has_records else None
    if expand is not None and isinstance(tree, (dict, list)):
        _expand(tree, expand)
    return encode(tree)


class _Walk:
    """One pass over a decoded body: its `to_json` tree, and the facts `_scan` would note."""

    __slots__ = ("acc", "blobs", "to_json")

    def __init__(self, to_json: Any) -> None:
        self.acc = _Acc()
        # (node, raw value) of every non-empty `records` field: expanded once the walk says
        # whether the body has batches, else written as to_json writes them
        self.blobs: list[tuple[dict, Any]] = []
        self.to_json = to_json

    def dict_(self, obj: dict, depth: int) -> dict:
        """A dict (Container) as to_json converts it; scanned while `depth` allows."""
        same, acc = _SAME, self.acc
        scan = depth <= _MAX_SCAN_DEPTH
        out: dict = {}
        for k, v in obj.items():
            key = k if type(k) is str else str(k)
            t = type(v)
            if t in same:
                out[key] = v
                if scan and k == "error_code":
                    acc.error_code(v)
                if k == "records" and t is str and v:
                    self.blobs.append((out, v))
            elif isinstance(v, dict):
                out[key] = self.dict_(v, depth + 1)
            elif isinstance(v, list):
                if scan and ("topic" in k or k == "responses"):
                    acc.topic_list(v)
                out[key] = self.list_(v, depth + 1)
            elif k == "records" and isinstance(v, _BLOB):
                if scan:
                    acc.blob(v)
                if len(v):
                    out[key] = None  # its place in the dict; the value once the walk is done
                    self.blobs.append((out, v))
                else:
                    out[key] = self.to_json(v)
            else:
                out[key] = self.to_json(v)
                if scan and k == "error_code":
                    acc.error_code(v)
        return out

    def list_(self, obj: list, depth: int) -> list:
        """A list as to_json converts it; its dicts and lists scanned while `depth` allows."""
        same = _SAME
        out = []
        for v in obj:
            if type(v) in same:
                out.append(v)
            elif isinstance(v, dict):
                out.append(self.dict_(v, depth + 1))
            elif isinstance(v, list):
                out.append(self.list_(v, depth + 1))
            else:
                out.append(self.to_json(v))
        return out


def facts_and_json(body: Any, codec: Any) -> tuple[Facts, str]:
    """`facts(body)` and `body_json(codec, body, ...)` in one walk, for kipwire's own codec."""
    native = _native_for(codec, True)
    if native is not None:
        found = native.facts_and_json(body)
        if found is not None:
            return found
    return _facts_and_json(body, codec)


def _facts_and_json(body: Any, codec: Any) -> tuple[Facts, str]:
    """facts_and_json in Python: the reference the C walk gives the same answers as."""
    if not isinstance(body, dict):
        found = facts(body)
        return found, body_json(codec, body, found[3])
    walk = _Walk(codec.to_json)
    tree = walk.dict_(body, 0)
    found = walk.acc.facts(body)
    expand = records_expander(codec) if found[3] else None
    for node, raw in walk.blobs:
        text = type(raw) is str
        if expand is None:
            node["records"] = raw if text else codec.to_json(raw)
            continue
        try:
            node["records"] = expand(base64.b64decode(raw) if text else bytes(raw))
        except Exception as exc:  # noqa: BLE001 - keep the raw blob and say why
            node["records"] = raw if text else codec.to_json(raw)
            node["records_error"] = error_text(exc)
    return found, encode(tree)
