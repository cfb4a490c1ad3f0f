"""`python -m kipwire.generator build|check|compile|import-upstream|diff-upstream`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .build import generate, generate_c, stale_c_files, stale_files, write, write_c
from .spec import SchemaError

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "jsonschemas"
OUTPUT = ROOT / "codec" / "messages"
COMPILED = ROOT / "codec" / "_compiled"
ERRORS = SCHEMAS / "errors.tsv"
ENUMS = SCHEMAS / "enums.tsv"


def main(argv: list[str] | None = None) -> int:
    """Run the generator's command line."""
    parser = argparse.ArgumentParser(prog="python -m kipwire.generator", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="regenerate codec/messages and codec/_compiled from jsonschemas/")
    sub.add_parser("check", help="fail when the generated codec is not what build would write")
    comp = sub.add_parser("compile", help="compile schema folders into an importable package")
    comp.add_argument("schema_dirs", nargs="+", type=Path)
    comp.add_argument("--out", type=Path, required=True, help="the package folder to write")
    comp.add_argument("--errors", type=Path, help="an errors.tsv (code, name, retriable)")
    comp.add_argument("--enums", type=Path, help="an enums.tsv (enum, member, value, note)")
    imp = sub.add_parser("import-upstream", help="extract facts from Kafka's schema folders")
    imp.add_argument("args", nargs=argparse.REMAINDER)
    diff = sub.add_parser(
        "diff-upstream", help="show what a Kafka release's schema files change (folder or jar)"
    )
    diff.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    try:
        if args.command == "import-upstream":
            from .upstream import main as import_main

            return import_main(args.args) or 0
        if args.command == "diff-upstream":
            from .diff_upstream import main as diff_main

            return diff_main(args.args)
        if args.command == "compile":
            files = generate(args.schema_dirs, args.errors, "compile", args.enums)
            write(files, args.out)
            print(f"wrote {len(files)} files to {args.out}")
            return 0
        if not SCHEMAS.is_dir():
            # An installed package carries the generated codecs but not the schemas they came from.
            print(
                f"error: `{args.command}` needs a source checkout of kipwire"
                f" ({SCHEMAS} is missing); `compile` works anywhere",
                file=sys.stderr,
            )
            return 2
        files = generate(
            [SCHEMAS],
            ERRORS if ERRORS.exists() else None,
            enums_tsv=ENUMS if ENUMS.exists() else None,
        )
        c_files = generate_c([SCHEMAS])
        if args.command == "build":
            write(files, OUTPUT)
            write_c(c_files, COMPILED)
            print(f"wrote {len(files)} files to {OUTPUT.relative_to(ROOT)}")
            print(f"wrote {len(c_files)} files to {COMPILED.relative_to(ROOT)}")
            return 0
        stale = [OUTPUT / name for name in stale_files(files, OUTPUT)]
        stale += [COMPILED / name for name in stale_c_files(c_files, COMPILED)]
        if stale:
            print(
                "the generated codec is stale; run `python -m kipwire.generator build`:",
                file=sys.stderr,
            )
            for path in stale:
                print(f"  {path.relative_to(ROOT)}", file=sys.stderr)
            return 1
        print(
            f"codec/messages is current ({len(files)} files),"
            f" codec/_compiled is current ({len(c_files)} files)"
        )
        return 0
    except SchemaError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
