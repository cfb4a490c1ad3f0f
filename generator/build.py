"""Turns a folder of schema files into a generated codec package, and checks it is current."""

from __future__ import annotations

import hashlib
from pathlib import Path

from .emit_c import c_shards
from .emit_enums import enums_module
from .emit_module import emit_module, header, module_name
from .layout import Group, literal_group, render
from .spec import MessageSpec, SchemaError, load_message
from .versions import OPEN


def load_schemas(dirs: list[Path]) -> list[MessageSpec]:
    """Every `*.json` directly inside the given folders, checked; duplicate names are an error."""
    specs: dict[str, MessageSpec] = {}
    for d in dirs:
        if not d.is_dir():
            raise SchemaError(str(d), "", "not a folder")
        for path in sorted(d.glob("*.json")):
            spec = load_message(path)
            if spec.name in specs:
                raise SchemaError(
                    str(path), spec.name, f"also defined in {specs[spec.name].source}"
                )
            specs[spec.name] = spec
    return [specs[name] for name in sorted(specs)]


def _api_name(request_name: str) -> str:
    return request_name.removesuffix("Request")


def api_requests(specs: list[MessageSpec]) -> dict[int, MessageSpec]:
    """API key -> its request message, in key order.

    When a key has two names (Kafka renamed ListClientMetricsResources to ListConfigResources),
    the one with the most versions wins; the other stays reachable through `message()`.
    """
    best: dict[int, MessageSpec] = {}
    for s in specs:
        if s.type == "request" and s.api_key is not None:
            rank = (s.valid_versions.hi, s.name)
            held = best.get(s.api_key)
            if held is None or rank > (held.valid_versions.hi, held.name):
                best[s.api_key] = s
    return dict(sorted(best.items()))


def api_table(specs: list[MessageSpec]) -> dict[int, tuple[str, str, str | None]]:
    """API key -> (api name, request message, response message)."""
    names = {s.name for s in specs if s.type == "response"}
    table = {}
    for key, req in api_requests(specs).items():
        api = _api_name(req.name)
        resp = f"{api}Response"
        table[key] = (api, req.name, resp if resp in names else None)
    return table


_API_CLASS = '''

class Api(NamedTuple):
    """One API key: its messages, the versions the schemas define, and who serves it."""

    name: str
    request: str
    response: str | None
    # (oldest, newest) version any schema folder defines, extension versions included.
    versions: tuple[int, int]
    # Who serves the API: "broker", "controller", "zkBroker" (the schema's "listeners").
    listeners: tuple[str, ...]
    # Versions Kafka advertises only when unstable API versions are enabled.
    unstable: tuple[int, ...]
    # (oldest, newest) of the versions Kafka marks deprecated; still served.
    deprecated: tuple[int, int] | None
    # (oldest, newest) of the versions the project adds beyond shipped Kafka; all of them for an
    # API only a KIP defines.
    extension: tuple[int, int] | None
    # (oldest, newest) of early-access versions Kafka withdrew: decoded, never advertised.
    withdrawn: tuple[int, int] | None

'''


def _api_entry(key: int, req: MessageSpec, names: tuple[str, str, str | None]) -> Group:
    valid, dep, ext = req.valid_versions, req.deprecated_versions, req.extension_versions
    gone = req.withdrawn_versions
    deprecated = None if dep.empty else (dep.lo, valid.hi if dep.hi == OPEN else dep.hi)
    facts = [
        f"versions={(valid.lo, valid.hi)!r}",
        f"listeners={tuple(req.listeners)!r}",
        f"unstable={(valid.hi,) if req.latest_version_unstable else ()!r}",
        f"deprecated={deprecated!r}",
        f"extension={None if ext.empty else (ext.lo, ext.hi)!r}",
        f"withdrawn={None if gone.empty else (gone.lo, gone.hi)!r}",
    ]
    return Group(f"{key}: Api(", [*map(repr, names), *facts], ")", fill=True)


# Kafka's storage module numbers its tiered-storage metadata records (RemoteLogMetadataSerde) in a
# key space of their own: they are messages, but not records of the KRaft log (`RECORDS`).
_REMOTE_LOG_METADATA = frozenset(
    {
        "RemoteLogSegmentMetadataRecord",
        "RemoteLogSegmentMetadataUpdateRecord",
        "RemotePartitionDeleteMetadataRecord",
        "RemoteLogSegmentMetadataSnapshotRecord",
    }
)


def _index_module(specs: list[MessageSpec], command: str) -> str:
    messages = {
        s.name: (
            module_name(s.name),
            s.type,
            s.api_key,
            None if s.valid_versions.empty else (s.valid_versions.lo, s.valid_versions.hi),
        )
        for s in specs
    }
    table = api_table(specs)
    apis = [_api_entry(key, req, table[key]) for key, req in api_requests(specs).items()]
    records = {
        s.api_key: s.name
        for s in specs
        if s.type == "metadata" and s.api_key is not None and s.name not in _REMOTE_LOG_METADATA
    }
    lines = [
        header(command)
        + '"""Which messages the package holds, which API key each belongs to, and the APIs."""',
        "",
        "from typing import NamedTuple",
        _API_CLASS,
        "# message name -> (module, message type, api key, (oldest, newest) version)",
        render(literal_group(messages), 0, "MESSAGES = "),
        "# api key -> Api",
        render(Group("{", list(apis), "}"), 0, "APIS = "),
        "# metadata record api key -> record message",
        render(literal_group(records), 0, "RECORDS = "),
    ]
    return "\n".join(lines) + "\n"


PACKAGE_INIT = '''"""Generated codecs: `message(name, version)` returns one as a construct."""

from kipwire.codec.registry import Registry

from ._index import APIS, MESSAGES, RECORDS, Api

registry = Registry(__name__, MESSAGES)
message = registry.message

__all__ = ["APIS", "MESSAGES", "RECORDS", "Api", "message", "registry"]
'''


def generate(
    schema_dirs: list[Path],
    errors_tsv: Path | None = None,
    command: str = "build",
    enums_tsv: Path | None = None,
) -> dict[str, str]:
    """Every file of the generated package, by file name, as `generator <command>` writes it."""
    specs = load_schemas(schema_dirs)
    files = {
        "__init__.py": header(command) + PACKAGE_INIT,
        "_index.py": _index_module(specs, command),
        "_enums.py": enums_module(specs, api_table(specs), errors_tsv, enums_tsv, command),
    }
    for spec in specs:
        files[f"{module_name(spec.name)}.py"] = emit_module(spec, Path(spec.source).name, command)
    return files


def write(files: dict[str, str], out: Path) -> None:
    """Write the package, removing generated modules that no longer have a schema."""
    out.mkdir(parents=True, exist_ok=True)
    for stale in stale_files(files, out):
        path = out / stale
        if path.exists() and stale not in files:
            path.unlink()
    for name, source in files.items():
        path = out / name
        if not path.exists() or path.read_text(encoding="utf-8") != source:
            path.write_text(source, encoding="utf-8")


def stale_files(files: dict[str, str], out: Path) -> list[str]:
    """Files under `out` that differ from `files`, are missing, or should not exist."""
    stale = []
    for name, source in files.items():
        path = out / name
        if not path.exists() or path.read_text(encoding="utf-8") != source:
            stale.append(name)
    if out.is_dir():
        stale += sorted(p.name for p in out.glob("*.py") if p.name not in files)
    return stale


C_HEADER = "/* Code generated by python -m kipwire.generator build. DO NOT EDIT. */\n"


def generate_c(schema_dirs: list[Path]) -> dict[str, str]:
    """Every generated file of the compiled codec (`codec/_compiled/`), by file name."""
    shards = c_shards(load_schemas(schema_dirs))
    files: dict[str, str] = {}
    rows = []
    for shard in shards:
        source = shard.source()
        digest = hashlib.sha256(source.encode()).hexdigest()[:16]
        name = f"shard_{shard.index}"
        files[f"{name}.c"] = C_HEADER + f'#define KW_DIGEST "{digest}"\n' + source
        rows.append(Group(f"{name!r}: ({digest!r}, ", [literal_group(tuple(shard.messages))], ")"))
    manifest = [
        header("build") + '"""The compiled shards: each one\'s digest and the messages it decodes.',
        "",
        "A shard whose DIGEST differs was built from other C sources: it is stale and not used.",
        '"""',
        "",
        render(Group("{", list(rows), "}"), 0, "SHARDS = "),
        "",
    ]
    files["_manifest.py"] = "\n".join(manifest)
    return files


def stale_c_files(files: dict[str, str], out: Path) -> list[str]:
    """Generated files of the compiled codec that differ, are missing, or should not exist."""
    stale = [n for n, s in files.items() if not (out / n).exists() or _text(out / n) != s]
    if out.is_dir():
        stale += sorted(p.name for p in out.glob("shard_*.c") if p.name not in files)
    return stale


def write_c(files: dict[str, str], out: Path) -> None:
    """Write the compiled codec's generated files, removing shards that no longer exist."""
    out.mkdir(parents=True, exist_ok=True)
    for path in out.glob("shard_*.c"):
        if path.name not in files:
            path.unlink()
    for name, source in files.items():
        if not (out / name).exists() or _text(out / name) != source:
            (out / name).write_text(source, encoding="utf-8")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")
