"""Decode a connection's frames and pair responses with requests, as plain row dicts.

The rows carry the columns of the `pdus`, `pairs` and `connections` tables (issue 4, item 5), so
the Spark job only wraps them. Timestamps are epoch nanoseconds (int); the job casts them.
A response is decoded with the API key and version of the request that has its correlation id
on the same connection; without that request it is a `request_missing` row.
"""

from __future__ import annotations

import inspect
import struct
from collections import deque
from collections.abc import Collection
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ..reading.reassembly import Connection
from .bodies import (
    NO_FACTS,
    Facts,
    body_json,
    count_records,
    error_text,
    facts,
    facts_and_json,
)
from .framing import FrameItem, split_frames
from .redaction import is_redacted_token
from .roles import orient

__all__ = [
    "ConnectionRows",
    "PDU_COLUMNS",
    "PAIR_COLUMNS",
    "CONNECTION_COLUMNS",
    "count_records",
    "decode_connection",
    "load_codec",
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


@dataclass(slots=True)
class ConnectionRows:
    """The rows one connection contributes to each table."""

    pdus: list[dict[str, Any]]
    pairs: list[dict[str, Any]]
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
        self.trailing = {"trailing": "ignore"} if "trailing" in params else {}
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


class _Decoded:
    __slots__ = (
        "status",
        "error",
        "api_version",
        "header_version",
        "client_id",
        "facts",
        "json",
        "trailing",
        "error_code",
        "redacted",
    )

    def __init__(self) -> None:
        self.status = "ok"
        self.redacted = False
        self.trailing: int | None = None
        self.error_code: int | None = None  # of a response that did not decode
        self.error: str | None = None
        self.api_version: int | None = None
        self.header_version: int | None = None
        self.client_id: str | None = None
        self.facts: Facts = NO_FACTS
        self.json: str | None = None


def _decode(
    decoder: Any,
    api: _Api,
    frame: bytes | memoryview,
    api_key: int,
    api_version: int,
    request: bool,
    with_json: bool,
) -> _Decoded:
    """Decode one whole frame, classifying any failure into a decode status."""
    d = _Decoded()
    d.api_version = api_version
    if api_key not in api.names:
        d.status, d.error = "unknown_api", f"API key {api_key} is not known to the codec"
        return d
    try:
        if api.is_extension is not None and api.is_extension(api_key, api_version):
            raise decoder.UnsupportedVersionError(
                f"{api.names[api_key]} v{api_version} is a kipwire extension, not Kafka's"
            )
        if request:
            msg = decoder.decode_request(frame, **api.trailing)
            d.client_id = msg.client_id
            if api.names[api_key] == "SaslAuthenticate":
                d.redacted = is_redacted_token(bytes(msg.body["auth_bytes"]))
        else:
            msg = decoder.decode_response(frame, api_key, api_version, **api.trailing)
        d.trailing = getattr(msg, "trailing_bytes", 0)
        # an ApiVersions error response is parsed as v0 and says so
        v = getattr(msg, "api_version", None)
        if isinstance(v, int):
            d.api_version = v
        d.header_version = _header_version(msg)
        if with_json and api.own_codec:
            d.facts, d.json = facts_and_json(msg.body, decoder)
        else:
            d.facts = facts(msg.body)
            if with_json:
                d.json = body_json(decoder, msg.body, d.facts[3])
    except api.unknown as exc:
        d.status, d.error = "unknown_api", error_text(exc)
    except api.unsupported as exc:
        d.status, d.error = "unsupported_version", error_text(exc)
    except decoder.DecodeError as exc:
        d.status, d.error = "malformed", error_text(exc)
    if d.status != "ok":
        if request:
            d.client_id = api.client_id(frame)
        else:
            d.error_code = api.error_code(frame, api_key, api_version)
    return d


def decode_connection(
    conn: Connection,
    *,
    capture: str,
    file: str,
    decoder: Any = None,
    with_body_json: bool = True,
    broker_ports: Collection[int] = (),
) -> ConnectionRows:
    """All rows of one connection: its PDUs (and gaps), request/response pairs, and a summary.

    A connection seen without its handshake gets its roles first (`roles.orient`, where
    `broker_ports` are the weakest hint).
    """
    conn = orient(conn, broker_ports)
    if decoder is None:
        decoder = load_codec()
    api = _Api(decoder)
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

    pdus: list[dict[str, Any]] = []
    pairs: list[dict[str, Any]] = []
    waiting: dict[int, deque[dict[str, Any]]] = {}  # correlation id -> pair rows not yet answered

    for i, it in enumerate(req_items):
        row = _pdu_row(base, "request", i, it)
        pdus.append(row)
        if it.kind not in ("frame", "truncated") or len(it.data) < 8:
            continue
        key, version, corr = _req_fixed(it.data, 0)
        row["api_key"] = key
        row["api_name"] = api.name(key)
        row["api_version"] = version
        row["correlation_id"] = corr
        if it.kind == "frame":
            d = _decode(decoder, api, it.data, key, version, True, with_body_json)
            _decoded_into(row, d)
            row["client_id"] = d.client_id
            row["redacted"] = d.redacted
        else:
            row["client_id"] = api.client_id(it.data)
        pair = {
            "capture": capture,
            "file": file,
            "flow_uid": uid,
            "correlation_id": corr,
            "api_key": key,
            "api_name": row["api_name"],
            "api_version": version,
            "client_id": row["client_id"],
            "request_ts": it.ts_ns,
            "response_ts": None,
            "rtt_ms": None,
            "request_length": it.length,
            "response_length": None,
            "error_code": None,
            "status": "no_response",
        }
        pairs.append(pair)
        waiting.setdefault(corr, deque()).append(pair)

    for i, it in enumerate(resp_items):
        row = _pdu_row(base, "response", i, it)
        pdus.append(row)
        if it.kind not in ("frame", "truncated") or len(it.data) < 4:
            continue
        (corr,) = _i32(it.data, 0)
        row["correlation_id"] = corr
        queue = waiting.get(corr)
        pair = queue.popleft() if queue else None
        if pair is None:
            if it.kind == "frame":
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
        pair["response_ts"] = it.ts_ns
        pair["rtt_ms"] = (
            (it.ts_ns - request_ts) / 1e6
            if it.ts_ns is not None and request_ts is not None
            else None
        )
        pair["response_length"] = it.length
        pair["status"] = "answered"
        if it.kind == "frame":
            d = _decode(decoder, api, it.data, key, version, False, with_body_json)
            _decoded_into(row, d)
            row["api_version"] = d.api_version
            if d.status != "ok":
                row["error_code"] = d.error_code
                pair["status"] = f"answered_{d.status}"  # the pair holds a failed response
            pair["error_code"] = row["error_code"]

    ts = conn.first_ts, conn.last_ts
    connection = {
        **base,
        "first_ts": ts[0],
        "last_ts": ts[1],
        "duration_s": (ts[1] - ts[0]) / 1e9,
        "request_pdus": sum(1 for it in req_items if it.kind in ("frame", "truncated")),
        "response_pdus": sum(1 for it in resp_items if it.kind in ("frame", "truncated")),
        "request_bytes": conn.to_server.captured,
        "response_bytes": conn.to_client.captured,
        "missed_bytes": conn.to_server.missing + conn.to_client.missing,
        "role_source": conn.role_source,
        "packets": conn.packets,
    }
    return ConnectionRows(pdus, pairs, connection)


def _decoded_into(row: dict[str, Any], d: _Decoded) -> None:
    """What decoding a frame found, into its `pdus` row."""
    row["decode_status"] = d.status
    row["decode_error"] = d.error
    row["header_version"] = d.header_version
    err, topics, records, _, ids = d.facts
    row["error_code"] = err
    row["topics"] = topics
    row["record_count"] = records
    row["body_json"] = d.json
    row["topic_ids"] = ids
    row["trailing_bytes"] = d.trailing


_STATUS = {"frame": "ok", "truncated": "truncated", "gap": "gap", "skipped": "malformed"}


def _pdu_row(base: dict[str, Any], direction: str, index: int, it: FrameItem) -> dict[str, Any]:
    # one literal in PDU_COLUMNS order (a test holds the two equal): the row of every PDU
    kind = it.kind
    return {
        **base,
        "direction": direction,
        "pdu_index": index,
        "ts": it.ts_ns,
        "length": it.length,
        "api_key": None,
        "api_name": None,
        "api_version": None,
        "header_version": None,
        "correlation_id": None,
        "client_id": None,
        "error_code": None,
        "topics": None,
        "record_count": None,
        "decode_status": _STATUS[kind],
        "decode_error": (
            f"{it.length} bytes skipped: {it.note}" if kind == "skipped" else it.note or None
        ),
        "body_json": None,
        "stream_offset": it.offset,
        "captured_bytes": it.captured,
        "trailing_bytes": None,
        "topic_ids": None,
        "redacted": False,
    }


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
