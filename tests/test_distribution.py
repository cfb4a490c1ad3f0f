"""The distribution: one `kipwire` name in site-packages, nothing a user's own files can shadow.

A wheel is built from the checkout and installed into a fresh virtual environment (the core
install, without extras), as `pip install kipwire` would.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]
PIP_TIMEOUT = 600


def _run(
    cmd: list[str], cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env, check=False
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    proc = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        timeout=PIP_TIMEOUT,
    )
    if proc.returncode != 0 and "Could not find a version" in proc.stderr + proc.stdout:
        pytest.skip(f"PyPI unreachable for the build backend: {proc.stderr.strip()[-200:]}")
    assert proc.returncode == 0, proc.stderr
    (built,) = out.glob("kipwire-*.whl")
    return built


@pytest.fixture(scope="module")
def core_python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed, no extras: `pip install kipwire`."""
    env_dir = tmp_path_factory.mktemp("venv")
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    proc = _run([str(python), "-m", "pip", "install", "-q", str(wheel)], timeout=PIP_TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    return python


def _folders_with_init() -> set[str]:
    mapping = {folder: name for name, folder in SETUPTOOLS["package-dir"].items()}
    found = set()
    for folder, name in mapping.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([name, *rel.parts]))
    return found


def test_package_list_names_every_package_folder():
    assert set(SETUPTOOLS["packages"]) == _folders_with_init()
    assert all(name.startswith("kipwire.") for name in SETUPTOOLS["packages"])


def test_wheel_installs_only_kipwire(wheel: Path):
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        (top_level,) = [n for n in names if n.endswith(".dist-info/top_level.txt")]
        assert zf.read(top_level).decode().split() == ["kipwire"]
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"kipwire"}
    assert "kipwire/codec/messages/fetch_request.py" in names
    assert "kipwire/codec/messages/_index.py" in names


def test_wheel_carries_the_compiled_codec(wheel: Path, core_python: Path, tmp_path: Path):
    """With a C compiler, the wheel holds every compiled shard (and the record loops and the
    capture bodies' JSON writer) and the install uses them."""
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler: the wheel is pure Python")
    compiled = ROOT / "codec" / "_compiled"
    shards = sorted([*(p.stem for p in compiled.glob("shard_*.c")), "records", "jsontext"])
    with zipfile.ZipFile(wheel) as zf:
        built = sorted(
            Path(n).name.split(".")[0]
            for n in zf.namelist()
            if n.startswith("kipwire/codec/_compiled/") and n.endswith(".so")
        )
    assert built == shards
    code = (
        "from kipwire import codec\nfrom kipwire.codec.records import batch\n"
        "print(codec.compiled, batch.NATIVE is not None)\n"
    )
    proc = _run([str(core_python), "-c", code], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True"]


def test_user_files_named_like_the_packages_change_nothing(core_python: Path, tmp_path: Path):
    (tmp_path / "codec.py").write_text("raise ImportError('the user codec.py was imported')\n")
    (tmp_path / "generator.py").write_text("raise ImportError('the user generator.py')\n")
    (tmp_path / "captures").mkdir()
    (tmp_path / "captures" / "traffic.pcap").write_bytes(b"\xd4\xc3\xb2\xa1")
    code = (
        "from kipwire import codec\n"
        "from kipwire.captures import pcap\n"
        "import kipwire.generator.spec\n"
        "frame = codec.encode_request(codec.ApiKey.API_VERSIONS, 3,\n"
        "    {'client_software_name': 'me', 'client_software_version': '1'}, correlation_id=7)\n"
        "print(codec.decode_request(frame).correlation_id, codec.__name__, pcap.__name__)\n"
    )
    proc = _run([str(core_python), "-c", code], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["7", "kipwire.codec", "kipwire.captures.pcap"]


def test_generator_compile_works_from_the_wheel(core_python: Path, tmp_path: Path):
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    (schemas / "PingRequest.json").write_text(
        '{"apiKey": 9000, "type": "request", "name": "PingRequest", "validVersions": "0",'
        ' "flexibleVersions": "0+", "fields": [{"name": "Token", "type": "int32",'
        ' "versions": "0+"}]}'
    )
    out = tmp_path / "pingcodec"
    proc = _run(
        [str(core_python), "-m", "kipwire.generator", "compile", str(schemas), "--out", str(out)],
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    use = "import pingcodec; print(pingcodec.message('PingRequest', 0).parse(b'\\0\\0\\0\\x05\\0'))"
    proc = _run([str(core_python), "-c", use], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "token = 5" in proc.stdout


def test_generator_build_from_the_wheel_says_it_needs_a_checkout(core_python: Path, tmp_path: Path):
    proc = _run([str(core_python), "-m", "kipwire.generator", "check"], cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "source checkout" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_capture_command_without_the_extra_names_it(core_python: Path, tmp_path: Path):
    pcap = tmp_path / "empty.pcap"
    pcap.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    command = core_python.parent / "kipwire-capture"
    proc = _run([str(command), "decode", str(pcap), "--out", str(tmp_path / "out")])
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    *_, error = proc.stderr.strip().splitlines()
    assert "pip install 'kipwire[captures]'" in error


def test_mock_cluster_serves_from_the_core_install(core_python: Path, tmp_path: Path):
    code = (
        "from kipwire.mockbroker import MockCluster\n"
        "with MockCluster(brokers=1) as cluster:\n"
        "    cluster.create_topic('t', partitions=1, replication_factor=1)\n"
        "    print(cluster.partition('t', 0).leader)\n"
    )
    proc = _run([str(core_python), "-c", code], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0"] or proc.stdout.split() == ["1"]


def test_wheel_ships_py_typed_and_mypy_reads_the_installed_package(
    wheel: Path, core_python: Path, tmp_path: Path
):
    """PEP 561: each package under the `kipwire` namespace carries py.typed, so mypy type-checks
    against the installed wheel (without the markers it reports the imports as untyped)."""
    pytest.importorskip("mypy", reason="mypy is in the test extras")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    for name in SETUPTOOLS["package-dir"]:
        assert f"{name.replace('.', '/')}/py.typed" in names
    usage = ROOT / "tests" / "typed_public_api.py"
    cmd = [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent"]
    cmd += ["--python-executable", str(core_python), "--cache-dir", str(tmp_path / "cache")]
    proc = _run([*cmd, str(usage)], cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
