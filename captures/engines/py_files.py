"""The zip of kipwire that `spark-submit --py-files` ships to executors.

Built from the kipwire packages as installed here (a wheel or an editable checkout alike), as
the `kipwire/` tree plus an empty `kipwire/__init__.py`: installed, `kipwire` is a namespace
package, and Python 3.11's zip importer does not find namespace packages in a zip (the reason
the built wheel does not work on `--py-files`).
"""

from __future__ import annotations

import importlib.util
import os
import zipfile
from pathlib import Path

__all__ = ["PACKAGES", "write_py_files"]

PACKAGES = ("codec", "captures", "demo", "generator", "mockbroker")


def write_py_files(dest: str | os.PathLike) -> Path:
    """Write the zip to `dest`; its path back."""
    dest = Path(dest)
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("kipwire/__init__.py", "")
        for sub in PACKAGES:
            spec = importlib.util.find_spec(f"kipwire.{sub}")
            if spec is None or not spec.submodule_search_locations:
                continue  # a package this installation lacks
            root = Path(list(spec.submodule_search_locations)[0])
            for f in sorted(root.rglob("*")):
                if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc":
                    zf.write(f, f"kipwire/{sub}/{f.relative_to(root).as_posix()}")
    return dest
