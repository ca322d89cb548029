"""Which sessions stay in memory: past [sessions] max_open, or idle longer than idle_minutes (checked
when a session opens or is prompted), the least recently used idle session is evicted
(OpenSessions.release, open_sessions.py). A prompt for an evicted session opens it again from the
store (without a replay), with the MCP servers and roots it had (SessionOpener.live).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..api import CrowCallbacks, EndReason
from ..core.hooks import run_hooks
from ..core.session_access import SessionView

if TYPE_CHECKING:
    from ..config import SessionsConfig
    from ..core.session import Session

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
        idle = [sid for sid in self.open if sid != keep and sid in sessions and not sessions[sid].control.busy]
        limit = self.config.idle_minutes
        now = time.monotonic()
        chosen = [sid for sid in idle if limit is not None and now - self.open[sid].used > limit * 60]
        excess = len(sessions) - len(chosen) - self.config.max_open
        chosen += [sid for sid in idle if sid not in chosen][: max(excess, 0)]
        return chosen


async def end_session(callbacks: CrowCallbacks, session: Session, reason: EndReason) -> None:
    await run_hooks(callbacks.end_session, SessionView(session), "end_session", reason=reason)
