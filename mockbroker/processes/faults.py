"""Faults across processes: the parent keeps the handles a test holds (`ParentFaults`), every
child a mirror of them (`MirrorFaults`) that its serve pipeline and link layer match against.

Each injection, removal and heal in the parent is sent to every child as the same call on its
mirror; a child reports back each time a mirrored injection fires (an error answered, a response
delayed) and each time its link layer holds or delays bytes, and the parent counts it on the
handle (`fired`, `remaining`, and removal once an error's count is spent, sent on to the
children). An error injection for any broker with a count can fire on two brokers at once before
the parent's removal reaches the second: process mode counts such a race twice.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from ..faults import ErrorInjection, FaultHandle, Faults
from ..network import Network, NodeId

Report = Callable[..., None]


class ParentFaults(Faults):
    """The parent's faults: every change also goes to the children (`broadcast`)."""

    def __init__(self, network: Network, broadcast: Report) -> None:
        super().__init__(network)
        self._broadcast = broadcast
        self._ids = itertools.count(1)
        self._by_id: dict[int, FaultHandle] = {}
        self._ids_of: dict[FaultHandle, int] = {}
        #: fault id -> the call that made it, for a child that starts after it
        self.calls: dict[int, tuple[str, tuple]] = {}

    def _added(self, handle: Any, method: str, *args: Any) -> Any:
        fid = next(self._ids)
        self._by_id[fid], self._ids_of[handle] = handle, fid
        self.calls[fid] = (method, args)
        self._broadcast("fault", fid, method, args)
        return handle

    def inject_error(
        self,
        api_key: int,
        error_code: int,
        count: int = 1,
        broker: int | None = None,
        link: tuple[NodeId, NodeId] | None = None,
        partition: tuple[str, int] | None = None,
    ) -> ErrorInjection:
        """`Faults.inject_error`, in every process."""
        handle = super().inject_error(api_key, error_code, count, broker, link, partition)
        return self._added(
            handle, "inject_error", api_key, error_code, count, broker, link, partition
        )

    def add_latency(
        self, seconds: float, broker: int | None = None, link: tuple[NodeId, NodeId] | None = None
    ) -> Any:
        """`Faults.add_latency`, in every process."""
        handle = super().add_latency(seconds, broker, link)
        return self._added(handle, "add_latency", seconds, broker, link)

    def cut(self, a: NodeId, b: NodeId) -> Any:
        """`Faults.cut`, in every process."""
        return self._added(super().cut(a, b), "cut", a, b)

    def cut_groups(self, groups: Any) -> Any:
        """`Faults.cut_groups`, in every process."""
        groups = [list(g) for g in groups]
        return self._added(super().cut_groups(groups), "cut_groups", groups)

    def isolate(self, node: NodeId) -> Any:
        """`Faults.isolate`, in every process."""
        return self._added(super().isolate(node), "isolate", node)

    def heal(self) -> None:
        """`Faults.heal`, in every process."""
        for handle in list(self._cuts):
            self._forget(handle)
        super().heal()
        self._broadcast("heal")

    def remove(self, handle: FaultHandle) -> None:
        """`Faults.remove`, in every process."""
        super().remove(handle)
        fid = self._forget(handle)
        if fid is not None:
            self._broadcast("unfault", fid)

    def _forget(self, handle: FaultHandle) -> int | None:
        fid = self._ids_of.pop(handle, None)
        if fid is not None:
            self._by_id.pop(fid, None)
            self.calls.pop(fid, None)
        return fid

    def fired(self, fid: int) -> None:
        """A child's mirror of fault `fid` fired."""
        handle = self._by_id.get(fid)
        if isinstance(handle, ErrorInjection):
            self._fire(handle)
        elif handle is not None:
            handle.fired += 1

    def observed(self, kind: str, src: NodeId, dst: NodeId) -> None:
        """A child's link layer held or delayed bytes."""
        self._observe(kind, src, dst)


class MirrorFaults(Faults):
    """A child's copy of the parent's faults; what fires is reported back (`report`)."""

    def __init__(self, network: Network, report: Report) -> None:
        super().__init__(network)
        self._report = report
        self._mirrors: dict[int, FaultHandle] = {}
        self._ids_of: dict[FaultHandle, int] = {}

    def apply(self, fid: int, method: str, args: tuple) -> None:
        """Make the parent's fault `fid` here (`method` is a `Faults` method's name)."""
        handle = getattr(Faults, method)(self, *args)
        self._mirrors[fid], self._ids_of[handle] = handle, fid

    def unapply(self, fid: int) -> None:
        """End the mirror of the parent's fault `fid`."""
        handle = self._mirrors.pop(fid, None)
        if handle is not None:
            self._ids_of.pop(handle, None)
            handle.remove()

    def heal(self) -> None:
        """End every cut and isolation here."""
        for handle in list(self._cuts):
            fid = self._ids_of.pop(handle, None)
            self._mirrors.pop(fid, None)
        super().heal()

    def _fire(self, injection: ErrorInjection) -> int:
        fid = self._ids_of.get(injection)
        if fid is not None:
            self._report("fired", fid)
        return super()._fire(injection)

    def response_delay(self, node: NodeId) -> float:
        """`Faults.response_delay`, reported to the parent when it delays."""
        injection = self.latency_for(node)
        delay = super().response_delay(node)
        fid = self._ids_of.get(injection) if injection is not None else None
        if delay and fid is not None:
            self._report("fired", fid)
        return delay

    def _observe(self, kind: str, src: NodeId, dst: NodeId) -> None:
        self._report("observed", kind, src, dst)
