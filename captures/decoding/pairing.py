"""Decode a connection's frames and pair responses with requests, as plain row dicts.

The rows carry the columns of the `pdus`, `pairs` and `connections` tables (issue 4, item 5), so
the Spark job only wraps them. Timestamps are epoch nanoseconds (int); the job casts them.
A response is decoded with the API key and version of the request that has its correlation id
on the same connection; without that request it is a `request_missing` row.

The engines take a table's rows as a `Columns` instead (`decode_connection(into=...)` with
`new_rows` tables, when the compiled loops are built: `engines/columns.h`), one list per column
and no dict per row; `new_rows`, `column_of` and `set_column` read and write either kind.
"""

from __future__ import annotations

import inspect
import struct
from collections import deque
from collections.abc import Collection
from dataclasses import dataclass
from functools import partial
from types import ModuleType
from typing import Any

from ..reading.native import NATIVE
from ..reading.reassembly import Connection
from .bodies import (
    body_json,
    count_records,
    error_text,
    facts,
    facts_and_json,
    frame_decoder,
)
from .framing import FrameItem, split_frames
from .redaction import is_redacted_token
from .roles import orient

__all__ = [
    "ConnectionRows",
    "PDU_COLUMNS",
    "PAIR_COLUMNS",
    "CONNECTION_COLUMNS",
    "column_of",
    "count_records",
    "decode_connection",
    "load_codec",
    "new_rows",
    "set_column",
]

# The column names of `engines.schema`'s tables, repeated so that building rows needs no
# pyarrow; tests/captures/engines/test_capture_schema.py holds the two equal.
PDU_COLUMNS = (
    "capture",
    "file",
    "flow_uid",
    "orig_h",
    "orig_p",
    "resp_h",
    "resp_p",
    "direction",
    "pdu_index",
    "ts",
    "length",
    "api_key",
    "api_name",
    "api_version",
    "header_version",
    "correlation_id",
    "client_id",
    "error_code",
    "topics",
    "record_count",
    "decode_status",
    "decode_error",
    "body_json",
    "stream_offset",
    "captured_bytes",
    "trailing_bytes",
    "topic_ids",
    "redacted",
)
PAIR_COLUMNS = (
    "capture",
    "file",
    "flow_uid",
    "correlation_id",
    "api_key",
    "api_name",
    "api_version",
    "client_id",
    "request_ts",
    "response_ts",
    "rtt_ms",
    "request_length",
    "response_length",
    "error_code",
    "status",
)
CONNECTION_COLUMNS = (
    "capture",
    "file",
    "flow_uid",
    "orig_h",
    "orig_p",
    "resp_h",
    "resp_p",
    "first_ts",
    "last_ts",
    "duration_s",
    "request_pdus",
    "response_pdus",
    "request_bytes",
    "response_bytes",
    "missed_bytes",
    "role_source",
    "packets",
)

_req_fixed = struct.Struct(">hhi").unpack_from  # api_key, api_version, correlation_id
_i32 = struct.Struct(">i").unpack_from
# The rows of a connection's frame items in C (`rows.c`), or None: the Python loops (`_rows`)
_NATIVE_ROWS = None if NATIVE is None else NATIVE.pdu_rows
# A table's rows held as columns (`engines/columns_type.c`), or None: lists of row dicts
_COLUMNS = None if NATIVE is None else NATIVE.Columns


def new_rows(names: tuple[str, ...]) -> Any:
    """An empty table of rows: a `Columns` of `names` when built, else a list.

    Either takes `extend` (row dicts or another table of rows), `len` and `rows[i]` (a dict).
    """
    if _COLUMNS is not None:
        return _COLUMNS(names)
    return []


def column_of(rows: Any, name: str) -> list[Any]:
    """A new list of every row's value under `name` (None where a row dict lacks it)."""
    if isinstance(rows, list):
        return [r.get(name) for r in rows]
    return rows.column(name)


def set_column(rows: Any, name: str, values: list[Any]) -> None:
    """Set every row's `name` to its value in `values`, in place."""
    if isinstance(rows, list):
        for r, v in zip(rows, values, strict=True):
            r[name] = v
    else:
        rows.set_column(name, values)


@dataclass(slots=True)
class ConnectionRows:
    """The rows one connection contributes to each table (`pdus` and `pairs` as `new_rows`)."""

    pdus: Any
    pairs: Any
    connection: dict[str, Any]


def load_codec() -> ModuleType:
    """Import the codec lazily: reading and reassembly work without it."""
    from kipwire import codec

    return codec


class _Api:
    """API names of the decoder, its error classes for each decode status, and its framing."""

    def __init__(self, decoder: Any) -> None:
        apis = getattr(decoder, "APIS", None)
        if apis:
            self.names = {int(k): v[0] for k, v in apis.items()}
        else:
            self.names = {int(k): _pascal(k.name) for k in decoder.ApiKey}
        # a codec without the finer error classes still reports every failure as malformed
        self.unknown = getattr(decoder, "UnknownApiError", ())
        self.unsupported = getattr(decoder, "UnsupportedVersionError", ())
        # no Kafka sends the project's extensions (codec.extensions): a capture never decodes one
        self.is_extension = getattr(decoder, "is_extension", None)
        # Kafka ignores bytes after a body (librdkafka sends some): decode them the same way
        params = inspect.signature(decoder.decode_request).parameters
        trailing = {"trailing": "ignore"} if "trailing" in params else {}
        # bound once: a call with **kwargs builds a dict each time
        self.decode_request = partial(decoder.decode_request, **trailing)
        self.decode_response = partial(decoder.decode_response, **trailing)
        # kipwire's own codec: one walk of each body gives its facts and its JSON
        self.own_codec = getattr(decoder, "__name__", "") == "kipwire.codec"
        framing = getattr(decoder, "framing", None)
        self.peek_header = getattr(framing, "peek_request_header", None)
        self.peek_error = getattr(framing, "peek_error_code", None)

    def client_id(self, frame: bytes | memoryview) -> str | None:
        """The client id of a request frame whose body did not decode, from its header."""
        if self.peek_header is None:
            return None
        try:
            return self.peek_header(frame).client_id
        except Exception:  # noqa: BLE001 - a header that does not parse has no client id
            return None

    def error_code(self, frame: bytes | memoryview, key: int, version: int) -> int | None:
        """The top-level error code of a response that did not decode, when the bytes hold it."""
        if self.peek_error is None:
            return None
        try:
            return self.peek_error(frame, key, version)
        except Exception:  # noqa: BLE001 - no error code to read is no error code
            return None

    def name(self, key: int | None) -> str | None:
        """Kafka's name of an API key (Produce, ApiVersions, ...), None when unknown."""
        return None if key is None else self.names.get(key)


_API_OF_MODULE: dict[ModuleType, _Api] = {}


def _api_of(decoder: Any) -> _Api:
    """The `_Api` of a decoder, made once per codec module (a signature read per connection
    cost more than a short connection's decode)."""
    if not isinstance(decoder, ModuleType):
        return _Api(decoder)
    api = _API_OF_MODULE.get(decoder)
    if api is None:
        api = _API_OF_MODULE[decoder] = _Api(decoder)
    return api


def _pascal(name: str) -> str:
    """API_VERSIONS -> ApiVersions."""
    return "".join(p.capitalize() for p in name.split("_"))


def _header_version(msg: Any) -> int | None:
    v = getattr(msg, "header_version", None)
    if isinstance(v, int):
        return v
    header = getattr(msg, "header", None)
    if isinstance(header, dict):
        v = header.get("header_version", header.get("version"))
        if isinstance(v, int):
            return v
    return None


def _decode_into(
    row: dict[str, Any],
    decoder: Any,
    api: _Api,
    frame: bytes | memoryview,
    api_key: int,
    api_version: int,
    request: bool,
    with_json: bool,
) -> str:
    """Decode one whole frame into its `pdus` row, classifying any failure; the status back.

    The row is fresh from `_pdu_row` (every decoded column None), and the values go straight
    into it: an object in between cost as much as the header decode.
    """
    if api_key not in api.names:
        row["decode_status"] = "unknown_api"
        row["decode_error"] = f"API key {api_key} is not known to the codec"
        return "unknown_api"
    status = "ok"
    error = None
    try:
        if api.is_extension is not None and api.is_extension(api_key, api_version):
            raise decoder.UnsupportedVersionError(
                f"{api.names[api_key]} v{api_version} is a kipwire extension, not Kafka's"
            )
        if request:
            msg = api.decode_request(frame)
            row["client_id"] = msg.client_id
            if api.names[api_key] == "SaslAuthenticate":
                row["redacted"] = is_redacted_token(bytes(msg.body["auth_bytes"]))
        else:
            msg = api.decode_response(frame, api_key, api_version)
            # an ApiVersions error response is parsed as v0 and says so
            v = getattr(msg, "api_version", None)
            if isinstance(v, int):
                row["api_version"] = v
        row["trailing_bytes"] = getattr(msg, "trailing_bytes", 0)
        row["header_version"] = _header_version(msg)
        body = msg.body
        if with_json and api.own_codec:
            found, text = facts_and_json(body, decoder)
        else:
            found = facts(body)
            text = body_json(decoder, body, found[3]) if with_json else None
    except api.unknown as exc:
        status, error = "unknown_api", error_text(exc)
    except api.unsupported as exc:
        status, error = "unsupported_version", error_text(exc)
    except decoder.DecodeError as exc:
        status, error = "malformed", error_text(exc)
    row["decode_status"] = status
    row["decode_error"] = error
    if status == "ok":
        err, row["topics"], row["record_count"], _, row["topic_ids"] = found
        row["error_code"] = err
        row["body_json"] = text
        return status
    # a failed decode keeps no facts and no JSON; the header's client id or the bytes' error
    # code where they can be read
    if request:
        row["client_id"] = api.client_id(frame)
    else:
        row["error_code"] = api.error_code(frame, api_key, api_version)
    return status


def decode_connection(
    conn: Connection,
    *,
    capture: str,
    file: str,
    decoder: Any = None,
    with_body_json: bool = True,
    broker_ports: Collection[int] = (),
    into: tuple[Any, Any] | None = None,
) -> ConnectionRows:
    """All rows of one connection: its PDUs (and gaps), request/response pairs, and a summary.

    A connection seen without its handshake gets its roles first (`roles.orient`, where
    `broker_ports` are the weakest hint). With `into`, two tables of rows of one kind
    (`new_rows`: lists of row dicts or `Columns`), the PDU and pair rows are appended to those
    and they are the ones returned: no table per connection.
    """
    conn = orient(conn, broker_ports)
    if decoder is None:
        decoder = load_codec()
    api = _api_of(decoder)
    uid = conn.uid
    base = {
        "capture": capture,
        "file": file,
        "flow_uid": uid,
        "orig_h": conn.orig_h,
        "orig_p": conn.client[1],
        "resp_h": conn.resp_h,
        "resp_p": conn.server[1],
    }
    req_items = split_frames(conn.to_server, requests=True)
    corrs = [
        _i32(it.data, 4)[0]
        for it in req_items
        if it.kind in ("frame", "truncated") and len(it.data) >= 8
    ]
    resp_items = split_frames(conn.to_client, requests=False, expected_corr=corrs)

    # every row starts as a copy of one with the connection's columns filled in
    blank = dict.fromkeys(PDU_COLUMNS)
    blank.update(base, redacted=False)
    # one C call per frame that decodes (the common case); False sends it to _decode_into
    fast = frame_decoder(decoder) if with_body_json and api.own_codec else None

    def slow(row: dict[str, Any], data: Any, key: int, version: int, request: bool) -> str:
        return _decode_into(row, decoder, api, data, key, version, request, with_body_json)

    found = None
    out, pairs_out = into if into is not None else ([], [])
    # `Columns` are appended to by pdu_rows itself; it makes lists of its own
    held = () if isinstance(out, list) else (out, pairs_out)
    if _NATIVE_ROWS is not None:
        found = _NATIVE_ROWS(
            blank,
            req_items,
            resp_items,
            api.names,
            fast,
            slow,
            api.client_id,
            partial(_orphan, capture, file, uid),
            (capture, file, uid),
            *held,
        )
    if found is None:
        found = _rows(blank, req_items, resp_items, api, fast, slow, (capture, file, uid))
    pdus, pairs, request_pdus, response_pdus = found
    if into is not None:
        if pdus is not out:  # the Python loops made them, or lists to add to
            out.extend(pdus)
            pdus = out
        if pairs is not pairs_out:
            pairs_out.extend(pairs)
            pairs = pairs_out

    ts = conn.first_ts, conn.last_ts
    connection = {
        **base,
        "first_ts": ts[0],
        "last_ts": ts[1],
        "duration_s": (ts[1] - ts[0]) / 1e9,
        "request_pdus": request_pdus,
        "response_pdus": response_pdus,
        "request_bytes": conn.to_server.captured,
        "response_bytes": conn.to_client.captured,
        "missed_bytes": conn.to_server.missing + conn.to_client.missing,
        "role_source": conn.role_source,
        "packets": conn.packets,
    }
    return ConnectionRows(pdus, pairs, connection)


def _rows(
    blank: dict[str, Any],
    req_items: list[FrameItem],
    resp_items: list[FrameItem],
    api: _Api,
    fast: Any,
    slow: Any,
    pair_base: tuple[str, str, str],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int, int]:
    """The `pdus` and `pairs` rows of a connection's frame items, and its request and response
    PDUs: `decoding/rows.c` is the compiled one."""
    pdus: list[dict[str, Any]] = []
    pairs: list[dict[str, Any]] = []
    waiting: dict[int, deque[dict[str, Any]]] = {}  # correlation id -> pair rows not yet answered
    names = api.names
    capture, file, uid = pair_base

    for i, it in enumerate(req_items):
        row = _pdu_row(blank, "request", i, it)
        pdus.append(row)
        kind, _, ts, length, data = it[:5]
        if (kind != "frame" and kind != "truncated") or len(data) < 8:
            continue
        key, version, corr = _req_fixed(data, 0)
        name = names.get(key)
        row["api_key"] = key
        row["api_name"] = name
        row["api_version"] = version
        row["correlation_id"] = corr
        if kind == "frame":
            if fast is None or not fast(row, data, key, version, True):
                slow(row, data, key, version, True)
        else:
            row["client_id"] = api.client_id(data)
        pair = {
            "capture": capture,
            "file": file,
            "flow_uid": uid,
            "correlation_id": corr,
            "api_key": key,
            "api_name": name,
            "api_version": version,
            "client_id": row["client_id"],
            "request_ts": ts,
            "response_ts": None,
            "rtt_ms": None,
            "request_length": length,
            "response_length": None,
            "error_code": None,
            "status": "no_response",
        }
        pairs.append(pair)
        queue = waiting.get(corr)
        if queue is None:
            waiting[corr] = deque((pair,))
        else:
            queue.append(pair)

    for i, it in enumerate(resp_items):
        row = _pdu_row(blank, "response", i, it)
        pdus.append(row)
        kind, _, ts, length, data = it[:5]
        if (kind != "frame" and kind != "truncated") or len(data) < 4:
            continue
        (corr,) = _i32(data, 0)
        row["correlation_id"] = corr
        queue = waiting.get(corr)
        pair = queue.popleft() if queue else None
        if pair is None:
            if kind == "frame":
                row["decode_status"] = "request_missing"
                row["decode_error"] = f"no captured request has correlation id {corr}"
            pairs.append(_orphan(capture, file, uid, corr, it))
            continue
        key, version = pair["api_key"], pair["api_version"]
        row["api_key"] = key
        row["api_name"] = pair["api_name"]
        row["api_version"] = version
        row["client_id"] = pair["client_id"]
        request_ts = pair["request_ts"]
        pair["response_ts"] = ts
        pair["rtt_ms"] = (
            (ts - request_ts) / 1e6 if ts is not None and request_ts is not None else None
        )
        pair["response_length"] = length
        pair["status"] = "answered"
        if kind == "frame":
            if fast is not None and fast(row, data, key, version, False):
                status = "ok"
            else:
                status = slow(row, data, key, version, False)
            if status != "ok":
                pair["status"] = f"answered_{status}"  # the pair holds a failed response
            pair["error_code"] = row["error_code"]

    count = ("frame", "truncated")
    return (
        pdus,
        pairs,
        sum(1 for it in req_items if it.kind in count),
        sum(1 for it in resp_items if it.kind in count),
    )


_STATUS = {"frame": "ok", "truncated": "truncated", "gap": "gap", "skipped": "malformed"}


def _pdu_row(blank: dict[str, Any], direction: str, index: int, it: FrameItem) -> dict[str, Any]:
    """The `pdus` row of a frame item: a copy of `blank` (every column, in PDU_COLUMNS order)."""
    kind, offset, ts, length, _, captured, note = it
    row = blank.copy()
    row["direction"] = direction
    row["pdu_index"] = index
    row["ts"] = ts
    row["length"] = length
    row["decode_status"] = _STATUS[kind]
    if kind == "skipped":
        row["decode_error"] = f"{length} bytes skipped: {note}"
    elif note:
        row["decode_error"] = note
    row["stream_offset"] = offset
    row["captured_bytes"] = captured
    return row


def _orphan(capture: str, file: str, uid: str, corr: int, it: FrameItem) -> dict[str, Any]:
    row = dict.fromkeys(PAIR_COLUMNS)
    row.update(
        capture=capture,
        file=file,
        flow_uid=uid,
        correlation_id=corr,
        response_ts=it.ts_ns,
        response_length=it.length,
        status="orphan_response",
    )
    return row
