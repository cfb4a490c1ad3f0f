"""Compiles the compiled codec's C shards (`codec/_compiled/shard_*.c`), the record batches'
hand-written loops (`codec/_compiled/records.c`), the capture bodies' JSON writer
(`codec/_compiled/jsontext.c`) and the capture pipeline's loops (`captures/*/*.c`) when a C
compiler works.

Everything else about the package is in pyproject.toml. Without a working compiler the install
still succeeds, says once that the pure-Python codec path is in use, and ships no extension.
"""

import os
import sys
import tempfile
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

COMPILED = Path("codec") / "_compiled"


def _extensions() -> list[Extension]:
    shards = [
        Extension(
            f"kipwire.codec._compiled.{source.stem}",
            [str(source)],
            depends=[str(header) for header in sorted(COMPILED.glob("runtime*.h"))],
            optional=True,
        )
        for source in sorted(COMPILED.glob("shard_*.c"))
    ]
    records = Extension(
        "kipwire.codec._compiled.records",
        [str(COMPILED / "records.c")],
        depends=[str(COMPILED / "records_frame.h"), str(COMPILED / "varint.h")],
        optional=True,
    )
    # a decoded body's facts and JSON text for the capture job (captures/decoding/bodies.py)
    jsontext = Extension(
        "kipwire.codec._compiled.jsontext",
        [str(COMPILED / "jsontext.c")],
        depends=[
            str(COMPILED / f"{n}.h")
            for n in (
                "jsontext_out",
                "jsontext_records",
                "jsontext_facts",
                "jsontext_frame",
                "varint",
            )
        ],
        optional=True,
    )
    # the capture pipeline's loops, each C file beside the Python code it stands in for
    native = Extension(
        "kipwire.captures.reading.compiled",
        [
            "captures/reading/compiled.c",
            "captures/reading/walk.c",
            "captures/reading/reassembly.c",
            "captures/decoding/framing.c",
            "captures/decoding/rows.c",
            "captures/engines/columns.c",
            "captures/engines/columns_type.c",
            "captures/engines/fragments.c",
        ],
        depends=[
            "captures/reading/compiled.h",
            "captures/engines/columns.h",
            "captures/decoding/rows_row.h",
        ],
        optional=True,
    )
    return [*shards, records, jsontext, native]


class BuildExt(build_ext):
    """build_ext that compiles the shards side by side and skips them without a compiler."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1

    def build_extensions(self) -> None:
        if not self._compiler_works():
            print(
                "kipwire: no working C compiler; the pure-Python codec path is in use",
                file=sys.stderr,
            )
            self.extensions = []
            return
        if self.compiler.compiler_type == "unix":
            # No debug info (a third of the build time); -O2 is as fast here as -O3.
            flags = ["-O2", "-g0", "-Wno-unused-function"]
            link = []
            if os.environ.get("KIPWIRE_ASAN") == "1":  # `make asan`
                flags = ["-O1", "-g", "-fsanitize=address", "-fno-omit-frame-pointer"]
                link = ["-fsanitize=address"]
            for ext in self.extensions:
                ext.extra_compile_args = flags
                ext.extra_link_args = link
        super().build_extensions()

    def _compiler_works(self) -> bool:
        with tempfile.TemporaryDirectory() as tmp:
            probe = Path(tmp) / "probe.c"
            probe.write_text("#include <Python.h>\nint kipwire_probe(void) { return 0; }\n")
            try:
                self.compiler.compile([str(probe)], output_dir=tmp, include_dirs=self.include_dirs)
            except Exception:
                return False
        return True


setup(ext_modules=_extensions(), cmdclass={"build_ext": BuildExt})
