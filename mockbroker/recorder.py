"""Record every connection of the cluster as pcapng, with real TCP/IP framing.

The writer keeps its bytes in memory (`PcapngWriter` without a destination) and a trio task
writes them to the file from a worker thread, so no disk write blocks the brokers.

`clients_only` leaves out the nodes' own connections (heartbeats, metadata and replica
fetches): a connection is known to be a node's at its first request, so it is tapped then.
`max_bytes` rotates as `tcpdump -C` does: once a file holds that many bytes the next one starts
(FILE, FILE1, FILE2, ...), each a whole pcapng with its own section header; a connection that
spans two files has its handshake in the first.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import trio

from kipwire.captures.pcap import PcapngWriter, TcpConversation

FLUSH_INTERVAL = 0.2
Address = tuple[str, int]


class ConnectionTap:
    """The recorder's view of one connection: what each side sent, then the close."""

    def __init__(self, recorder: Recorder, client: Address, server: Address) -> None:
        self._recorder = recorder
        self._client, self._server = client, server
        self._conversation: TcpConversation | None = None
        self._decided = False
        if not recorder.clients_only:
            self._start()

    def _start(self) -> None:
        self._decided = True
        if not (self._recorder.clients_only and self._recorder.is_node(self._client)):
            self._conversation = self._recorder.conversation(self._client, self._server)

    def client_sends(self, data: bytes) -> None:
        """A request frame as the client sent it (size prefix included)."""
        if not self._decided:
            self._start()
        if self._conversation is not None:
            self._conversation.client_sends(len(data).to_bytes(4, "big") + data)

    def server_sends(self, data: bytes) -> None:
        """A response frame as the broker sent it (already size-prefixed)."""
        if self._conversation is not None:
            self._conversation.server_sends(data)

    def close(self, *, by_client: bool = True) -> None:
        """The FIN exchange."""
        if self._conversation is not None:
            self._conversation.close(by_client=by_client)


class Recorder:
    """Writes the cluster's traffic to one pcapng file, or to a rotation of them."""

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        clients_only: bool = False,
        is_node: Callable[[Address], bool] = lambda peer: False,
        max_bytes: int | None = None,
    ) -> None:
        if max_bytes is not None and max_bytes < 1:
            raise ValueError(f"max_bytes must be at least 1, got {max_bytes}")
        self.path = os.fspath(path)
        self.clients_only = clients_only
        self.is_node = is_node
        self.max_bytes = max_bytes
        #: Every file written so far, the current one last.
        self.files = [self.path]
        self._writer = PcapngWriter(None)
        self._file = open(self.path, "wb")  # noqa: SIM115 - closed by close()
        self._size = 0

    def conversation(self, client: Address, server: Address) -> TcpConversation:
        """A new recorded TCP conversation."""
        return self._writer.conversation(client, server)

    def tap(self, stream: trio.SocketStream, server: Address) -> ConnectionTap:
        """Start recording a connection accepted at `server` (a broker or the controller)."""
        return ConnectionTap(self, stream.socket.getpeername()[:2], server)

    async def run(self) -> None:
        """Write the recorded bytes to the file until cancelled."""
        while True:
            await trio.sleep(FLUSH_INTERVAL)
            data = self._writer.data_to_send()
            if data:
                await trio.to_thread.run_sync(self._write, data)

    def _write(self, data: bytes) -> None:
        if self.max_bytes is None:
            self._file.write(data)
            return
        # block by block, as tcpdump -C checks packet by packet: a file never ends inside a
        # block, and a new file is opened only when there is a block to put in it
        view = memoryview(data)
        at = 0
        while at < len(view):
            length = int.from_bytes(view[at + 4 : at + 8], "little")
            if length < 12:
                raise ValueError(f"not a pcapng block at byte {at} of the recorder's output")
            if self._size >= self.max_bytes:
                self._rotate()
            self._file.write(view[at : at + length])
            self._size += length
            at += length

    def _rotate(self) -> None:
        self._file.close()
        path = f"{self.path}{len(self.files)}"
        self.files.append(path)
        self._file = open(path, "wb")  # noqa: SIM115 - closed by close() or the next rotation
        header = PcapngWriter(None).data_to_send()
        self._file.write(header)
        self._size = len(header)

    def close(self) -> None:
        """Write what is left and close the file."""
        self._write(self._writer.data_to_send())
        self._file.close()
