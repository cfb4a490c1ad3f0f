"""A child's recorder (process mode): taps that forward every frame of its connections to the
parent, whose `Recorder` writes the one capture file."""

from __future__ import annotations

import trio

from .channel import Channel


class ForwardedTap:
    """A connection's tap whose frames go to the parent's recorder."""

    def __init__(self, channel: Channel, tap_id: int) -> None:
        self._channel, self._id = channel, tap_id

    def client_sends(self, data: bytes) -> None:
        """A request frame (without its size prefix)."""
        self._channel.post("tap", self._id, "client_sends", bytes(data))

    def server_sends(self, data: bytes) -> None:
        """A response frame (size-prefixed)."""
        self._channel.post("tap", self._id, "server_sends", bytes(data))

    def close(self, *, by_client: bool = True) -> None:
        """The connection closed."""
        self._channel.post("tap", self._id, "close", by_client)


class ForwardingTaps:
    """The recorder of a child: taps that forward to the parent's `Recorder`."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel
        self._next = 0

    def tap(self, stream: trio.SocketStream, server: tuple[str, int]) -> ForwardedTap:
        """Start forwarding a connection accepted at `server`."""
        self._next += 1
        client = stream.socket.getpeername()[:2]
        self._channel.post("tap", self._next, "open", client, server)
        return ForwardedTap(self._channel, self._next)
