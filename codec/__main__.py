"""`python -m kipwire.codec decode|describe`: Kafka frames and message schemas from a shell."""

from __future__ import annotations

import argparse
import json
import struct
import sys
from collections.abc import Iterator
from typing import IO, Any

from .. import codec
from .messages import MESSAGES, registry

_SIZE = struct.Struct(">i")


def iter_frames(stream: IO[bytes]) -> Iterator[tuple[int, bytes | None, str | None]]:
    """Yield (offset, frame, problem) for each size-prefixed frame; a cut-off frame ends it."""
    data = stream.read()
    pos = 0
    while pos < len(data):
        if len(data) - pos < 4:
            yield pos, None, f"{len(data) - pos} bytes left, too few for a size prefix"
            return
        (size,) = _SIZE.unpack_from(data, pos)
        if size < 0 or size > len(data) - pos - 4:
            yield pos, None, f"frame claims {size} bytes but {len(data) - pos - 4} remain"
            return
        yield pos, data[pos + 4 : pos + 4 + size], None
        pos += 4 + size


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


def decode(args: argparse.Namespace) -> int:
    """Print one JSON object per request frame; undecodable frames become error objects."""
    stream = open(args.file, "rb") if args.file != "-" else sys.stdin.buffer  # noqa: SIM115
    failures = 0
    with stream:
        for offset, frame, problem in iter_frames(stream):
            out: dict[str, Any] = {"offset": offset}
            if frame is None:
                out["error"] = problem
                failures += 1
            else:
                try:
                    if args.response is not None:
                        key, version = args.response
                        resp = codec.decode_response(frame, key, version)
                        out.update(api_key=key, api_version=resp.api_version)
                        out["correlation_id"] = resp.correlation_id
                        body = resp.body
                    else:
                        req = codec.decode_request(frame)
                        out.update(api_key=req.api_key, api_version=req.api_version)
                        out.update(correlation_id=req.correlation_id, client_id=req.client_id)
                        body = req.body
                    out["api_name"] = codec.APIS[out["api_key"]][0]
                    out["body"] = codec.to_json(_expand(body) if args.records else body)
                except codec.DecodeError as e:
                    out.update(error=e.reason, error_offset=e.offset, error_path=e.path)
                    failures += 1
            print(json.dumps(out, sort_keys=False))
    return 1 if failures else 0


def _in_range(text: str, version: int) -> bool:
    if text == "none":
        return False
    if text.endswith("+"):
        return version >= int(text[:-1])
    lo, _, hi = text.partition("-")
    return int(lo) <= version <= int(hi or lo)


def _describe_fields(fields: tuple, version: int | None, indent: str) -> Iterator[str]:
    for name, ftype, versions, nullable, tagged, tag, default, ignorable, children in fields:
        if version is not None and not _in_range(versions, version):
            continue
        notes = []
        if version is None:
            notes.append(f"versions {versions}")
        for label, text in (("nullable", nullable), ("tagged", tagged)):
            if text != "none" and (version is None or _in_range(text, version)):
                notes.append(label if version is not None else f"{label} {text}")
        if tag is not None and (version is None or _in_range(tagged, version)):
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
    """Run the codec's command line."""
    parser = argparse.ArgumentParser(prog="python -m kipwire.codec", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    dec = sub.add_parser("decode", help="decode size-prefixed frames to JSON lines")
    dec.add_argument("file", nargs="?", default="-", help="frame file (default: stdin)")
    dec.add_argument(
        "--response",
        nargs=2,
        type=int,
        metavar=("API_KEY", "VERSION"),
        help="the frames are responses to this API key and version",
    )
    dec.add_argument("--records", action="store_true", help="expand records into batches")
    des = sub.add_parser("describe", help="show a message's fields")
    des.add_argument("name")
    des.add_argument("--version", type=int)
    args = parser.parse_args(argv)
    return decode(args) if args.command == "decode" else describe(args)


if __name__ == "__main__":
    sys.exit(main())
