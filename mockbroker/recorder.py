"""Record every connection of the cluster as pcapng, with real TCP/IP framing.

The writer keeps its bytes in memory (`PcapngWriter` without a destination) and a trio task
writes them to the file from a worker thread, so no disk write blocks the brokers.
"""

from __future__ import annotations

import os

import trio

from kipwire.captures.pcap import PcapngWriter, TcpConversation

FLUSH_INTERVAL = 0.2


class ConnectionTap:
    """The recorder's view of one connection: what each side sent, then the close."""

    def __init__(self, conversation: TcpConversation) -> None:
        self._conversation = conversation

    def client_sends(self, data: bytes) -> None:
        """A request frame as the client sent it (size prefix included)."""
        self._conversation.client_sends(len(data).to_bytes(4, "big") + data)

    def server_sends(self, data: bytes) -> None:
        """A response frame as the broker sent it (already size-prefixed)."""
        self._conversation.server_sends(data)

    def close(self, *, by_client: bool = True) -> None:
        """The FIN exchange."""
        self._conversation.close(by_client=by_client)


class Recorder:
    """Writes one pcapng file for the cluster's lifetime."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)
        self._writer = PcapngWriter(None)
        self._file = open(self.path, "wb")  # noqa: SIM115 - closed by close()

    def tap(self, stream: trio.SocketStream, server: tuple[str, int]) -> ConnectionTap:
        """Start recording a connection accepted at `server` (a broker or the controller)."""
        client = stream.socket.getpeername()[:2]
        return ConnectionTap(self._writer.conversation(client, server))

    async def run(self) -> None:
        """Write the recorded bytes to the file until cancelled."""
        while True:
            await trio.sleep(FLUSH_INTERVAL)
            data = self._writer.data_to_send()
            if data:
                await trio.to_thread.run_sync(self._file.write, data)

    def close(self) -> None:
        """Write what is left and close the file."""
        self._file.write(self._writer.data_to_send())
        self._file.close()
