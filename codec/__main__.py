"""`python -m kipwire.codec decode|describe`: Kafka frames and message schemas from a shell."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict, deque
from collections.abc import Iterator
from typing import IO, Any

from .. import codec
from .framing import FrameBuffer, peek_error_code, peek_request_header
from .messages import MESSAGES, registry
from .versions import Versions

PROG = "python -m kipwire.codec"
_READ_SIZE = 1 << 20
# A dump file is not a socket: allow any frame Kafka's int32 size can describe, the file's own
# length bounds what is buffered.
_MAX_FRAME = (1 << 31) - 1


class _Unreadable(Exception):
    """An input file that cannot be opened or read: one line for the user, exit status 2."""


def iter_frames(stream: IO[bytes]) -> Iterator[tuple[int, memoryview | None, str | None]]:
    """Yield (offset, frame, problem) for each size-prefixed frame; a cut-off frame ends it."""
    buf = FrameBuffer(_MAX_FRAME)
    while True:
        chunk = stream.read(_READ_SIZE)
        buf.feed(chunk)
        while True:
            offset = buf.position
            try:
                frame = buf.next_frame()
            except codec.DecodeError as e:
                yield offset, None, e.reason
                return
            if frame is None:
                break
            yield offset, frame, None
        if not chunk:
            break
    if buf.buffered:
        size = buf.next_frame_size
        if size is None:
            problem = f"{buf.buffered} bytes left, too few for a size prefix"
        else:
            problem = f"frame claims {size} bytes but {buf.buffered - 4} remain"
        yield buf.position, None, problem


def _open(path: str) -> IO[bytes]:
    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")  # noqa: SIM115 (closed by the caller's with)
    except OSError as e:
        raise _Unreadable(f"cannot read {path}: {e.strerror or e}") from None


def _frames(path: str) -> Iterator[tuple[int, memoryview | None, str | None]]:
    with _open(path) as stream:
        try:
            yield from iter_frames(stream)
        except OSError as e:  # e.g. a directory opens on some systems but does not read
            raise _Unreadable(f"cannot read {path}: {e.strerror or e}") from None


def _expand(body: Any) -> Any:
    from .records import expand_records

    def walk(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if key in ("records", "unaligned_records") and isinstance(value, bytes | memoryview):
            return expand_records(bytes(value))
        return value

    return walk(body)


def _request_versions(path: str) -> dict[int, deque[tuple[int, int]]]:
    """Correlation id -> (api key, version) of each request in a dump, in the order sent."""
    sent: dict[int, deque[tuple[int, int]]] = defaultdict(deque)
    for _offset, frame, _problem in _frames(path):
        if frame is None:
            continue
        try:
            head = peek_request_header(frame)
        except codec.DecodeError:
            continue  # decoding that request shows its error; its response stays unpaired
        sent[head.correlation_id].append((head.api_key, head.api_version))
    return sent


def _decode_frame(
    frame: memoryview,
    args: argparse.Namespace,
    sent: dict[int, deque[tuple[int, int]]] | None,
    out: dict[str, Any],
) -> None:
    """Fill `out` with the decoded frame; raises DecodeError (with what is known in `out`).

    `sent` holds the requests that responses pair with (from --requests), else None.
    """
    if sent is not None or args.response is not None:
        if args.response is not None:
            key, version = args.response
        else:
            corr = int.from_bytes(frame[:4], "big", signed=True) if len(frame) >= 4 else None
            asked = sent.get(corr) if sent is not None else None
            if not asked:
                raise codec.DecodeError(f"no request with correlation id {corr} to pair with")
            key, version = asked.popleft()
        out.update(api_key=key, api_version=version)
        try:
            resp = codec.decode_response(frame, key, version, trailing="ignore")
        except codec.DecodeError:
            out["response_error_code"] = peek_error_code(frame, key, version)
            raise
        out.update(api_version=resp.api_version, correlation_id=resp.correlation_id)
        decoded = resp
    else:
        decoded = codec.decode_request(frame, trailing="ignore")
        out.update(api_key=decoded.api_key, api_version=decoded.api_version)
        out.update(correlation_id=decoded.correlation_id, client_id=decoded.client_id)
    out["api_name"] = codec.APIS[out["api_key"]][0]
    if decoded.trailing_bytes:
        out["trailing_bytes"] = decoded.trailing_bytes
    out["body"] = codec.to_json(_expand(decoded.body) if args.records else decoded.body)


def decode(args: argparse.Namespace) -> int:
    """Print one JSON object per frame; undecodable frames become error objects."""
    sent = _request_versions(args.requests) if args.requests is not None else None
    failures = 0
    for offset, frame, problem in _frames(args.file):
        out: dict[str, Any] = {"offset": offset}
        if frame is None:
            out["error"] = problem
            failures += 1
        else:
            try:
                _decode_frame(frame, args, sent, out)
            except codec.DecodeError as e:
                out.update(error=e.reason, error_offset=e.offset, error_path=e.path)
                failures += 1
        print(json.dumps(out, sort_keys=False))
    return 1 if failures else 0


def _describe_fields(fields: tuple, version: int | None, indent: str) -> Iterator[str]:
    for name, ftype, versions, nullable, tagged, tag, default, ignorable, children in fields:
        if version is not None and version not in Versions.parse(versions):
            continue
        notes = []
        if version is None:
            notes.append(f"versions {versions}")
        for label, text in (("nullable", nullable), ("tagged", tagged)):
            if text != "none" and (version is None or version in Versions.parse(text)):
                notes.append(label if version is not None else f"{label} {text}")
        if tag is not None and (version is None or version in Versions.parse(tagged)):
            notes.append(f"tag {tag}")
        if default:
            notes.append(f"default {default}")
        if ignorable:
            notes.append("ignorable")
        yield f"{indent}{name} ({ftype}){': ' + ', '.join(notes) if notes else ''}"
        yield from _describe_fields(children, version, indent + "  ")


def describe(args: argparse.Namespace) -> int:
    """Print a message's fields, for one version or with each field's version ranges."""
    if args.name not in MESSAGES:
        close = [n for n in MESSAGES if args.name.lower() in n.lower()]
        print(f"unknown message {args.name!r}" + (f"; did you mean {close}?" if close else ""))
        return 2
    module = registry.module(args.name)
    span = module.VERSIONS
    flexible = module.FLEXIBLE_FROM
    print(
        f"{module.NAME} ({module.TYPE}"
        + (f", api key {module.API_KEY}" if module.API_KEY is not None else "")
        + f"): versions {span[0]}-{span[1]}" * (span is not None)
        + (f", flexible from {flexible}" if flexible is not None else "")
    )
    if args.version is not None and (span is None or not span[0] <= args.version <= span[1]):
        print(f"{args.name} has no version {args.version}")
        return 2
    for line in _describe_fields(module.SCHEMA, args.version, "  "):
        print(line)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the codec's command line: bad input is one line on stderr and a non-zero exit."""
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    dec = sub.add_parser("decode", help="decode size-prefixed frames to JSON lines")
    dec.add_argument("file", nargs="?", default="-", help="frame file (default: stdin)")
    kind = dec.add_mutually_exclusive_group()
    kind.add_argument(
        "--response",
        nargs=2,
        type=int,
        metavar=("API_KEY", "VERSION"),
        help="the frames are responses to this API key and version",
    )
    kind.add_argument(
        "--requests",
        metavar="REQUEST_FILE",
        help="the frames are responses, each paired by correlation id with a request in this "
        "dump (responses of any API, in any order)",
    )
    dec.add_argument("--records", action="store_true", help="expand records into batches")
    des = sub.add_parser("describe", help="show a message's fields")
    des.add_argument("name")
    des.add_argument("--version", type=int)
    args = parser.parse_args(argv)
    try:
        return decode(args) if args.command == "decode" else describe(args)
    except _Unreadable as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader (e.g. `head`) left: nothing more can be printed; keep Python's own flush
        # at exit from failing on the closed pipe too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print(f"{PROG}: output closed before the end (broken pipe)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
