"""The sessions open in one agent: found by id, driven from Python, and let go of.

A MultiAgent, a bridge and an observer drive open sessions through the agent's public methods,
which delegate here, instead of reaching into a session: each takes a session id and raises
`RequestError.resource_not_found` when that session is not open in this agent.

A session leaves memory through `release`: its turn is cancelled and has recorded, its MCP servers
close, its lease goes, and the end_session callbacks run, so per-session state in callbacks is
freed. Which idle sessions go when is the pool's choice (SessionPool, below): past [sessions] max_open,
or idle longer than idle_minutes (checked when a session opens or is prompted), the least recently used
idle session is evicted. A prompt for an evicted session opens it again from the store (without a
replay), with the MCP servers and roots it had (SessionOpener.live, opener.py).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from acp import RequestError

from ...api import CrowCallbacks, EndReason
from ...core.hooks import run_hooks
from ...core.session import Session
from ...core.session_view import SessionView
from ...history import EntryMeta, Handoff
from ...util.secrets import redact, redact_json
from ..prompt.message import split_command, to_model_text

if TYPE_CHECKING:
    from ...config import SessionsConfig
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
        idle = [sid for sid in self.open if sid != keep and sid in sessions and not sessions[sid].control.busy]
        limit = self.config.idle_minutes
        now = time.monotonic()
        chosen = [sid for sid in idle if limit is not None and now - self.open[sid].used > limit * 60]
        excess = len(sessions) - len(chosen) - self.config.max_open
        chosen += [sid for sid in idle if sid not in chosen][: max(excess, 0)]
        return chosen


async def end_session(callbacks: CrowCallbacks, session: Session, reason: EndReason) -> None:
    await run_hooks(callbacks.end_session, SessionView(session), "end_session", reason=reason)


class SharedBoard(Protocol):
    """A graph's shared context (multi.blackboard.Blackboard), which a member session's context joins."""

    def join(self, context: Mapping[str, Any], save: Callable[[], None]) -> dict[str, Any]: ...


class OpenSessions:
    def __init__(self, pool: SessionPool, leases: Leases, callbacks: Callable[[], CrowCallbacks]) -> None:
        self.by_id: dict[str, Session] = {}
        self.pool = pool
        self.leases = leases
        self._callbacks = callbacks
        """The agent's callbacks as they are now (set_callbacks may replace them after this is built)."""
        self.released: list[Callable[[str], None]] = []
        """Called with the id of each session that leaves memory (the checkpoints close its change journal)."""

    def get(self, session_id: str) -> Session:
        if session_id not in self.by_id:
            raise RequestError.resource_not_found(session_id)
        return self.by_id[session_id]

    def add(self, session: Session) -> None:
        self.by_id[session.id] = session

    # Driving an open session from Python
    def is_open(self, session_id: str) -> bool:
        return session_id in self.by_id

    def in_turn(self, session_id: str) -> bool:
        return self.get(session_id).control.lock.locked()

    def offers_command(self, session_id: str, text: str) -> bool:
        return split_command(text)[0] in self.get(session_id).commands

    def record_prompt(self, session_id: str, blocks: list[dict[str, Any]]) -> None:
        content = redact(to_model_text(blocks))  # no key reaches the store, even one the user pasted
        self.get(session_id).record(
            {"role": "user", "content": content}, EntryMeta("prompt", blocks=redact_json(blocks))
        )

    def mark_handoff(self, session_id: str, since: int, source: str | None) -> None:
        session = self.get(session_id)
        for entry in session.history[since:]:
            if entry.message["role"] == "user" and entry.meta.kind == "prompt":
                session.update_meta(entry, replace(entry.meta, handoff=Handoff(source)))
                return

    async def flush(self, session_id: str) -> None:
        if session_id in self.by_id:
            await self.leases.flushed(session_id)

    def join_blackboard(self, session_id: str, board: SharedBoard) -> None:
        session = self.get(session_id)
        session.data["context"] = board.join(session.context, self._saver(session_id))
        session.save()

    def _saver(self, session_id: str) -> Callable[[], None]:
        def save() -> None:
            if (session := self.by_id.get(session_id)) is not None:  # closed sessions were saved when closed
                session.save()

        return save

    # Stopping and letting go
    def cancel(self, session_id: str) -> None:
        """Stop the running turn, and any prompt already waiting behind it."""
        if session := self.by_id.get(session_id):
            session.control.cancel()

    def forget_source(self, session_id: str) -> None:
        """A deleted session's open forks forget it, as the store's copies did: a later save writes no link back."""
        for session in self.by_id.values():
            if session.data.get("forked_from") == session_id:
                del session.data["forked_from"]

    async def release(self, session_id: str, reason: EndReason) -> None:
        """A session leaves memory: its turn cancelled and recorded, its MCP servers closed, end_session run."""
        session = self.by_id.get(session_id)
        if session is None:
            if reason == "closed":
                self.pool.evicted.pop(session_id, None)  # closed while evicted: a prompt must not reopen it
            return
        if reason == "evicted" and session.control.busy:
            return  # an eviction never cancels work: a prompt may have started since the victims were picked
        self.cancel(session_id)
        async with session.control.lock:  # the cancelled turn has wound down and recorded its results
            if self.by_id.get(session_id) is not session:
                return  # released meanwhile by someone else
            self.by_id.pop(session_id)
            self.pool.forget(session_id, evicted=reason == "evicted")
            await session.mcp.close()
            await self.leases.give_back(session_id)  # another process may open it now
            for released in self.released:
                released(session_id)
        await end_session(self._callbacks(), session, reason)

    async def evict(self, keep: str) -> None:
        for session_id in self.pool.victims(self.by_id, keep):
            await self.release(session_id, "evicted")

    async def release_all(self) -> list[Session]:
        """Crow stops: every session's MCP servers close and end_session runs (no turn is waited for)."""
        sessions = list(self.by_id.values())
        self.by_id.clear()
        await asyncio.gather(*(session.mcp.close() for session in sessions))
        for session in sessions:
            self.pool.forget(session.id)
            for released in self.released:
                released(session.id)
            await end_session(self._callbacks(), session, "shutdown")
        return sessions
