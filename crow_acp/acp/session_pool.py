"""Which sessions stay in memory, and how one leaves it (closed, evicted, or crow stopping).

A session leaves memory through `release`: its turn is cancelled and has recorded, its MCP servers
close, and the end_session callbacks run, so per-session state in callbacks is freed. Past
[sessions] max_open, or idle longer than idle_minutes (checked when a session opens or is
prompted), the least recently used idle session is evicted; a prompt for an evicted session opens it again from the store (without a replay), with
the MCP servers and roots it had.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..api import CrowCallbacks, EndReason
from ..core.hooks import run_hooks
from ..core.session_access import SessionView

if TYPE_CHECKING:
    from ..config import SessionsConfig
    from ..core.session import Session
    from .leases import Leases

REMEMBERED = 1024
"""Evicted sessions whose MCP servers are remembered for a transparent reopen."""


@dataclass
class Opening:
    """How a session was opened, so an evicted one comes back as it was."""

    cwd: str
    mcp_servers: list[Any] = field(default_factory=list)
    directories: list[str] | None = None
    used: float = field(default_factory=time.monotonic)


class SessionPool:
    def __init__(self, config: SessionsConfig) -> None:
        self.config = config
        self.open: OrderedDict[str, Opening] = OrderedDict()
        """Least recently used first."""
        self.evicted: OrderedDict[str, Opening] = OrderedDict()
        self.pinned = False
        """True for a MultiAgent's members: their sessions leave memory only with the whole graph."""

    def opened(self, session_id: str, opening: Opening) -> None:
        self.evicted.pop(session_id, None)
        self.open[session_id] = opening
        self.open.move_to_end(session_id)

    def touch(self, session_id: str) -> None:
        if opening := self.open.get(session_id):
            opening.used = time.monotonic()
            self.open.move_to_end(session_id)

    def forget(self, session_id: str, *, evicted: bool = False) -> None:
        opening = self.open.pop(session_id, None)
        if evicted and opening is not None:
            self.evicted[session_id] = opening
            while len(self.evicted) > REMEMBERED:
                self.evicted.popitem(last=False)

    def victims(self, sessions: dict[str, Session], keep: str | None = None) -> list[str]:
        """Idle sessions to evict now: the idle-too-long ones, then the oldest past max_open."""
        if self.pinned:
            return []
        idle = [sid for sid in self.open if sid != keep and sid in sessions and not _busy(sessions[sid])]
        limit = self.config.idle_minutes
        now = time.monotonic()
        chosen = [sid for sid in idle if limit is not None and now - self.open[sid].used > limit * 60]
        excess = len(sessions) - len(chosen) - self.config.max_open
        chosen += [sid for sid in idle if sid not in chosen][: max(excess, 0)]
        return chosen


def _busy(session: Session) -> bool:
    return session.lock.locked() or session.scope is not None


class SessionLifecycle:
    """How an AcpAgent's sessions leave memory and come back (AcpAgent inherits it)."""

    sessions: dict[str, Session]
    pool: SessionPool
    callbacks: CrowCallbacks
    _session: Callable[[str], Session]
    cancel: Callable[..., Awaitable[None]]
    _reopen: Callable[..., Awaitable[None]]
    _spawn: Callable[[Any], None]
    leases: Leases

    def keep_sessions_open(self) -> None:
        """Never evict this agent's sessions: a MultiAgent's members are closed with their graph, since
        its run reaches into member sessions between prompts."""
        self.pool.pinned = True

    async def _live(self, session_id: str) -> Session:
        """The session in memory; one evicted for room is opened again, as it was."""
        if session_id not in self.sessions and (opening := self.pool.evicted.get(session_id)):
            await self._reopen(session_id, opening.cwd, opening.mcp_servers, opening.directories, replay=False)
        self.pool.touch(session_id)
        if self.pool.config.idle_minutes is not None:  # the idle ones go in the background, not before this prompt
            self._spawn(self._evict(keep=session_id))
        return self._session(session_id)

    async def _release(self, session_id: str, reason: EndReason) -> None:
        """A session leaves memory: its turn cancelled and recorded, its MCP servers closed, end_session run."""
        session = self.sessions.get(session_id)
        if session is None:
            if reason == "closed":
                self.pool.evicted.pop(session_id, None)  # closed while evicted: a prompt must not reopen it
            return
        if reason == "evicted" and _busy(session):
            return  # an eviction never cancels work: a prompt may have started since the victims were picked
        await self.cancel(session_id)
        async with session.lock:  # the cancelled turn has wound down and recorded its results
            if self.sessions.get(session_id) is not session:
                return  # released meanwhile by someone else
            self.sessions.pop(session_id)
            self.pool.forget(session_id, evicted=reason == "evicted")
            await session.mcp.close()
            await self.leases.give_back(session_id)  # another process may open it now
        await end_session(self.callbacks, session, reason)

    async def _evict(self, keep: str) -> None:
        for session_id in self.pool.victims(self.sessions, keep):
            await self._release(session_id, "evicted")


async def end_session(callbacks: CrowCallbacks, session: Session, reason: EndReason) -> None:
    await run_hooks(callbacks.end_session, SessionView(session), "end_session", reason=reason)
