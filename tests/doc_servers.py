"""The dev brokers a doc starts in the background for tests/test_docs.py.

`$ kipwire-broker serve ... --control-port N &` starts one on a free control port, which stands
in for the doc's N in the later commands and their output (so parallel runs never collide); it
is stopped as Ctrl-C would stop it at the doc's end, and must exit 0.
"""

from __future__ import annotations

import os
import selectors
import shlex
import signal
import subprocess
import time
from pathlib import Path

START_TIMEOUT = 30


class DocServerError(AssertionError):
    """A background dev broker that did not start or stop as the doc says; names the line."""


def background_serve(argv: list[str]) -> bool:
    """Whether a doc's command is a background dev broker with a control port."""
    return argv[1:2] == ["serve"] and argv[-1:] == ["&"] and "--control-port" in argv


class Servers:
    """The doc's background dev brokers and the control ports that replace the doc's own."""

    def __init__(self) -> None:
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self.ports: dict[str, str] = {}

    def start(self, argv: list[str], where: str, cwd: Path, env: dict[str, str]) -> None:
        """Start `kipwire-broker serve ... --control-port N &` and wait for its control URL."""
        args = argv[:-1]
        at = args.index("--control-port") + 1
        doc_port, args[at] = args[at], "0"
        proc = subprocess.Popen(
            args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.procs.append((where, proc))
        deadline = time.monotonic() + START_TIMEOUT
        printed = b""
        with selectors.DefaultSelector() as selector:
            # unbuffered reads: a buffered reader could hold the control line while select waits
            selector.register(proc.stdout, selectors.EVENT_READ)
            while b"control: " not in printed or not printed.endswith(b"\n"):
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(timeout=left):
                    break
                data = os.read(proc.stdout.fileno(), 4096)
                if not data:
                    break
                printed += data
        for line in printed.decode().splitlines():
            if line.startswith("control: "):
                self.ports[doc_port] = line.rsplit(":", 1)[1].split("/")[0]
                return
        raise DocServerError(f"{where}: `{shlex.join(argv)}` printed no control URL")

    def rewrite(self, text: str) -> str:
        """The doc's control ports replaced by the real ones."""
        for doc_port, port in self.ports.items():
            text = text.replace(f"127.0.0.1:{doc_port}", f"127.0.0.1:{port}")
        return text

    def stop(self) -> None:
        """Stop every server as Ctrl-C would; each must exit 0."""
        failed = []
        for where, proc in self.procs:
            proc.send_signal(signal.SIGINT)
            try:
                proc.communicate(timeout=START_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
            if proc.returncode != 0:
                failed.append(f"{where}: the dev broker exited {proc.returncode} on SIGINT")
        self.procs.clear()
        self.ports.clear()
        if failed:
            raise DocServerError("; ".join(failed))
