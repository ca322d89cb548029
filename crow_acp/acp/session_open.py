"""How an AcpAgent brings a session into memory: from the store with its history made valid again,
its MCP servers started, its commands offered and begin_session run; on session/load, its history
replayed to the editor; after the response, what was held back sent.

AcpAgent inherits SessionOpening; session/new, load, resume and fork (agent.py) call it.
"""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from acp import RequestError

from ..api import CrowCallbacks, OffersCommands, SlashCommand
from ..core.costs import shown_on_load
from ..core.history_rules import repair_entries
from ..core.hooks import run_hooks
from ..core.session import INTERRUPTED, Session, answer_open_calls
from ..core.session_access import SessionView
from ..history import StoredMessage
from ..mcp.host import McpHost, server_specs
from ..mcp.specs import check_servers
from ..model.client import prewarm
from ..policy.remembered import bind_to_roots
from ..util.imports import off_loop
from ..util.text import clean_meta, clean_text, repair
from .mcp_live import all_commands, report_failures
from .mcp_live import attach as attach_mcp
from .replay import OneByOne, UpdateSink
from .session_options import OptionHandlers, mode_command
from .session_pool import Opening
from .updates import commands_update, replay_updates
from .wire import check_directories

if TYPE_CHECKING:
    from ..config import Config
    from ..events import Event
    from ..model.profiles import Models
    from ..store import SessionRecord, SessionStore
    from .leases import Leases


class SessionOpening(OptionHandlers):
    """Opening offers the /mode command (OptionHandlers) and evicts idle sessions (SessionLifecycle)."""

    config: Config
    callbacks: CrowCallbacks
    models: Models
    leases: Leases
    sessions: dict[str, Session]
    conn: Any
    update_sink: UpdateSink | None = None
    """Where a load's replay goes; None: through `conn`, one update at a time (crow serve sets its own)."""
    client_capabilities: Any
    _held: dict[str, list[Event]]
    _prewarmed: bool
    _emit: Callable[[Event], Awaitable[None]]
    _spawn: Callable[[Any], None]
    _session: Callable[[str], Session]
    close_session: Callable[..., Awaitable[None]]

    @property
    @abstractmethod
    def store(self) -> SessionStore:
        """The agent's session store (AcpAgent.store)."""

    async def _stored_entries(self, session_id: str) -> list[StoredMessage]:
        if session_id in self.sessions:  # open here: cancel its turn and let it record, then read
            await self.close_session(session_id)
        record = await self.store.get(session_id)
        if record is None:
            raise RequestError.resource_not_found(session_id)
        await self.leases.take(session_id)
        return _repair_stored(self.store, record, await self.store.load(session_id))

    async def _reopen(
        self, session_id: str, cwd: str, mcp_servers: list[Any] | None, directories: list[str] | None, *, replay: bool
    ) -> None:
        """A stored session back in memory and started; on load, its history replayed to the editor."""
        check_directories(cwd, directories)
        check_servers(mcp_servers)
        entries = await self._stored_entries(session_id)
        self._held[session_id] = []  # callbacks' reports follow the replay and the response, as on session/new
        session = await self._restore(session_id, cwd, entries, directories)
        # The rows read, plus the results repair_history gave to calls a killed process left open.
        stored = {entry.row_id for entry in entries}
        shown = [*entries, *(e for e in session.history if e.row_id not in stored and e.row_id is not None)] if replay else []
        # Replay while the MCP servers start: both take a while, and neither needs the other.
        await asyncio.gather(self._replay(session_id, shown), self._start(session, mcp_servers, loaded=True))
        self._after_response(session_id)

    async def _replay(self, session_id: str, entries: list[StoredMessage]) -> None:
        if self.conn:
            await (self.update_sink or OneByOne(self.conn)).send_updates(session_id, replay_updates(entries))

    async def _restore(
        self, session_id: str, cwd: str, entries: list[StoredMessage], directories: list[str] | None
    ) -> Session:
        """The session object with its stored history (valid for the model again), not yet started."""
        if session_id in self.sessions:  # loaded again while open: finish with the live one first
            await self.close_session(session_id)
        record = await self.store.get(session_id)
        assert record is not None
        if directories is not None:  # the editor's roots now, over the ones stored
            record.data["additional_directories"] = directories
            self.store.update(session_id, data=record.data)
        timeouts = self.config.timeouts
        session = Session(
            id=session_id,
            cwd=cwd,
            store=self.store,
            model=self.models.client(record.data.get("model")),
            emit=self._emit,
            mcp=McpHost(cwd=cwd, connect_timeout=timeouts.mcp_connect, call_timeout=timeouts.mcp_call),
            additional_directories=record.data.get("additional_directories", []),
            data=record.data,
            title=record.title,
            client=self.conn,
            client_capabilities=self.client_capabilities,
            last_row=max((entry.row_id or 0 for entry in entries), default=0),
        )
        repair_history(session, [e for e in entries if e.active])
        self.sessions[session_id] = session
        return session

    async def _start(self, session: Session, mcp_servers: list[Any] | None, *, loaded: bool) -> None:
        """Connect the MCP servers, offer the commands and run begin_session."""
        session.mcp.start(server_specs(mcp_servers or [], self.config.mcp_servers))  # in the background
        attach_mcp(session)
        session.data.setdefault("mode", self.config.permissions.default_mode)  # sessions from before modes
        bind_to_roots(session)  # "always" answers given under other roots (a fork or load elsewhere) go
        self.pool.opened(session.id, Opening(session.cwd, list(mcp_servers or []), list(session.additional_directories)))
        for callback in self.callbacks.all():
            offered: Sequence[SlashCommand] = callback.commands if isinstance(callback, OffersCommands) else ()
            for command in offered:
                session.commands[command.name] = command
        session.commands["mode"] = mode_command(self.options, self._session, lambda sid: self._options_changed(sid, mode=True))
        await run_hooks(self.callbacks.begin_session, SessionView(session), "begin_session", loaded=loaded)
        await self._evict(keep=session.id)

    def _after_response(self, session_id: str) -> None:
        """Runs once the session/new or session/load response has gone out (the SDK orders it so)."""
        self._spawn(self._announce(session_id))
        if not self._prewarmed and (session := self.sessions.get(session_id)):
            self._prewarmed = True
            self._spawn(off_loop(prewarm, session.model))  # while the user types

    async def _announce(self, session_id: str) -> None:
        held = self._held.pop(session_id, [])
        session = self.sessions.get(session_id)
        if session is None:
            return
        for event in held:
            await self._emit(event)
        if (usage := shown_on_load(session)) is not None:  # its cost, as the editor showed it before
            await self._emit(usage)
        await report_failures(session)
        if self.conn and (commands := all_commands(session)):
            await self.conn.session_update(session_id=session_id, update=commands_update(commands))


def repair_history(session: Session, entries: list[StoredMessage]) -> None:
    """Answer tool calls a killed process left open, so the history is valid for the model again."""
    session.history = list(entries)
    answer_open_calls(session, INTERRUPTED)
    session.history = repair_entries(session.history)  # damaged rows (orphans, bad ids or arguments) stay as stored


def _repair_stored(store: SessionStore, record: SessionRecord, entries: list[StoredMessage]) -> list[StoredMessage]:
    """A stored session's rows with valid Unicode, written back where they needed it (on load)."""
    for entry in entries:
        if repair(entry.message) and entry.row_id is not None:
            store.update_message(record.id, entry.row_id, message=entry.message)
        if (meta := clean_meta(entry.meta)) is not entry.meta:
            entry.meta = meta
            if entry.row_id is not None:
                store.update_message(record.id, entry.row_id, extra=meta.to_json())
    title = clean_text(record.title) if record.title else record.title
    if repair(record.data) or title != record.title:
        store.update(record.id, title=title, data=record.data)
    return entries
