"""Where a session's events go: to the editor's AcpUpdates first, then to the observers.

The editor's updates are crow's own code and are called directly (a failure there is crow's bug, and
AcpUpdates itself takes an editor that went away); the observers are user code, isolated by
call_user_code, so one that fails does not stop the turn.

Nothing may reach the editor for a session before its session/new or session/load response has
gone out, so an opening session's events are held until then. What the editor is about to see is
stored first, and nothing more of a session another process took over reaches it (but the notice
that says so).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from ...core.hooks import call_user_code
from ...events import Event, NoticeRaised, Observer


class Leases(Protocol):
    """What the outbox needs of the session leases (sessions/leases.py): a flush before an event goes
    out, and a way to warn the user when a lease is lost."""

    warn: Callable[[NoticeRaised], Awaitable[None]] | None

    async def flushed(self, session_id: str) -> bool: ...


class Outbox:
    def __init__(self, leases: Leases, store_opened: Callable[[], bool]) -> None:
        self.editor: Callable[[Event], Awaitable[None]] | None = None
        """The editor's AcpUpdates, once a connection is made (agent.on_connect)."""
        self.observers: list[Observer] = []
        self._leases = leases
        self._store_opened = store_opened
        self._held: dict[str, list[Event]] = {}
        leases.warn = self.emit

    def hold(self, session_id: str) -> None:
        """Keep the session's events back until `stop_holding` (its response has not gone out yet)."""
        self._held[session_id] = []

    def stop_holding(self, session_id: str) -> list[Event]:
        """The events held back for the session; from now on its events go out at once."""
        return self._held.pop(session_id, [])

    async def emit(self, event: Event) -> None:
        if (held := self._held.get(event.session_id)) is not None:
            held.append(event)
            return
        # Flushing is free when nothing is queued; a store never opened has nothing queued. A notice is
        # never stored, so it has nothing to wait for, and it may tell the user that the session was lost.
        if (
            not isinstance(event, NoticeRaised)
            and self._store_opened()
            and not await self._leases.flushed(event.session_id)
        ):
            return
        if self.editor is not None:
            await self.editor(event)
        for observer in self.observers:
            await call_user_code(observer, event)
