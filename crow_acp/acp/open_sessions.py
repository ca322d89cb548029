"""The sessions open in one agent: found by id, driven from Python, and let go of.

A MultiAgent, a bridge and an observer drive open sessions through the agent's public methods,
which delegate here, instead of reaching into a session: each takes a session id and raises
`RequestError.resource_not_found` when that session is not open in this agent.

A session leaves memory through `release`: its turn is cancelled and has recorded, its MCP servers
close, its lease goes, and the end_session callbacks run, so per-session state in callbacks is
freed. Which idle sessions go when is the pool's choice (session_pool.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from acp import RequestError

from ..api import CrowCallbacks, EndReason
from ..core.session import Session
from ..history import EntryMeta, Handoff
from ..util.secrets import redact, redact_json
from .prompt.blocks import split_command, to_model_text
from .session_pool import SessionPool, end_session

if TYPE_CHECKING:
    from .leases import Leases


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
            await end_session(self._callbacks(), session, "shutdown")
        return sessions
