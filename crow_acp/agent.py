"""AcpAgent: the ACP handlers around sessions and the loop.

A plain class, deliberately not a subclass of acp.Agent: the SDK routes only methods that exist,
so anything crow does not implement answers "method not found" instead of a silent null.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Sequence
from typing import Any

import anyio
from acp import RequestError
from acp.schema import (
    ForkSessionResponse,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    ResumeSessionResponse,
    SessionInfo,
)

from .acp_updates import AcpUpdates, commands_update, replay_updates
from .agent_sessions import SessionControl
from .capabilities import initialize_response
from .config import Config, load_config
from .errors import CommandError, CrowError
from .events import ErrorOccurred, Event, Observer, TextDelta, TitleChanged, TurnFinished
from .fork import copy_session
from .history import EntryMeta, StoredMessage
from .history_rules import repair_entries
from .hooks import CrowCallbacks, OffersCommands, SlashCommand, call_user_code, run_hooks
from .imports import off_loop
from .leases import Leases
from .llm import ModelClient
from .loop import CANCELLED, Turn, run_turn
from .mcp_host import McpHost, server_specs
from .mcp_live import all_commands, report_failures, wait_for_servers
from .mcp_live import attach as attach_mcp
from .models import Models
from .permissions import Permissions
from .prompt_blocks import as_dicts, split_command, user_text
from .prompt_input import PromptRefused, model_content, stored_blocks
from .secrets import protect, redact_json
from .session import Session, SessionAccess, answer_open_calls
from .session_options import OptionHandlers, SessionOptions, mode_command
from .session_pool import Opening, SessionPool, end_session
from .store import SessionRecord, SessionStore, open_store
from .text_repair import repair_stored
from .titles import name_session
from .wire import check_directories

log = logging.getLogger(__name__)

INTERRUPTED = "Interrupted: crow stopped before this tool call finished."


class AcpAgent(SessionControl, OptionHandlers):
    def __init__(self, config: Config | None = None, store: SessionStore | None = None, *, name: str = "crow") -> None:
        self.config = config or load_config()
        protect(self.config)  # commands, MCP servers, the store and the logs never get the model keys
        self.name = name
        self.callbacks = CrowCallbacks()
        self.observers: list[Observer] = []
        self.sessions: dict[str, Session] = {}
        self.conn: Any = None
        self.client_capabilities: Any = None
        self._store = store
        self._owns_store = store is None
        self.leases = Leases(lambda: self.store, self._lost, self.close_session)
        self.models = Models(self.config)
        self._held: dict[str, list[Event]] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._prewarmed = False
        self.options = SessionOptions(self.models, self.config)
        self.pool = SessionPool(self.config.sessions)

    # Composition
    def set_callbacks(self, callbacks: CrowCallbacks) -> None:
        self.callbacks = callbacks

    def add_observer(self, observer: Observer) -> None:
        self.observers.append(observer)

    def use_store(self, store: SessionStore) -> None:
        """Keep sessions in `store`, shared with other agents (`crow serve`); before any session opens."""
        self._store, self._owns_store = store, False

    @property
    def store(self) -> SessionStore:
        """The store given to the constructor, else the one the config names (SQLite by default)."""
        if self._store is None:
            self._store = open_store(self.config)
        return self._store

    @property
    def model(self) -> ModelClient:
        """The default model's client (a session may have picked another profile)."""
        return self.models.client()

    async def shutdown(self) -> None:
        """Close every session's MCP servers and the model client (the editor closed stdin)."""
        sessions, self.sessions = list(self.sessions.values()), {}
        await asyncio.gather(*(session.mcp.close() for session in sessions))
        for session in sessions:
            self.pool.forget(session.id)
            await end_session(self.callbacks, session, "shutdown")
        await self.models.close()
        await self._close_store(sessions)

    async def _close_store(self, sessions: list[Session]) -> None:
        """Every queued write lands and the leases go; a store the caller gave stays open for them."""
        if self._store is None:
            return
        await asyncio.gather(*(self.leases.give_back(session.id) for session in sessions))
        await self.leases.close()
        if self._owns_store:
            store, self._store = self._store, None
            await store.close()
        else:
            await self._store.flush()

    # ACP: connection
    def on_connect(self, conn: Any) -> None:
        self.conn = conn
        self.observers.insert(0, AcpUpdates(conn))

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, **_: Any) -> InitializeResponse:
        self.client_capabilities = client_capabilities
        return initialize_response(protocol_version)

    # ACP: sessions
    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, additional_directories: list[str] | None = None, **_: Any
    ) -> Any:
        check_directories(cwd, additional_directories)
        session_id = uuid.uuid4().hex
        now = time.time()
        data = {
            "additional_directories": additional_directories or [],
            "agent": self.name,
            "mode": self.config.permissions.default_mode,
        }
        self.store.create(SessionRecord(session_id, cwd, None, now, now, data))
        await self.leases.take(session_id)
        self._held[session_id] = []  # nothing may reach the editor before the session/new response
        await self._start(await self._restore(session_id, cwd, [], None), mcp_servers, loaded=False)
        self._after_response(session_id)
        return NewSessionResponse(session_id=session_id, config_options=self.config_options(session_id), modes=self._modes(session_id))

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, additional_directories: list[str] | None = None, **_: Any
    ) -> Any:
        await self._reopen(session_id, cwd, mcp_servers, additional_directories, replay=True)
        return LoadSessionResponse(config_options=self.config_options(session_id), modes=self._modes(session_id))

    async def resume_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, additional_directories: list[str] | None = None, **_: Any
    ) -> Any:
        await self._reopen(session_id, cwd, mcp_servers, additional_directories, replay=False)
        return ResumeSessionResponse(config_options=self.config_options(session_id), modes=self._modes(session_id))

    async def fork_session(
        self, session_id: str, cwd: str, additional_directories: list[str] | None = None, mcp_servers: list[Any] | None = None, **_: Any
    ) -> Any:
        """A new session with this one's history so far, independent from then on."""
        check_directories(cwd, additional_directories)
        fork_id = await copy_session(self.store, session_id, cwd, additional_directories)
        await self._reopen(fork_id, cwd, mcp_servers, additional_directories, replay=False)
        return ForkSessionResponse(session_id=fork_id, config_options=self.config_options(fork_id))

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **_: Any) -> ListSessionsResponse:
        sessions = [
            SessionInfo(
                session_id=r.id,
                cwd=r.cwd,
                title=r.title,
                updated_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(r.updated_at)),
            )
            for r in await self.store.list_sessions(cwd)
            if r.data.get("agent", self.name) == self.name
        ]
        return ListSessionsResponse(sessions=sessions)

    async def close_session(self, session_id: str, **_: Any) -> None:
        """Stop the session's work (as session/cancel does), then let go of it (end_session runs)."""
        await self._release(session_id, "closed")

    async def cancel(self, session_id: str, **_: Any) -> None:
        """Stop the running turn, and any prompt already waiting behind it."""
        session = self.sessions.get(session_id)
        if session:
            session.cancels += 1
            if session.scope:
                session.scope.cancel()

    # ACP: prompt
    async def prompt(self, prompt: list[Any], session_id: str, **_: Any) -> PromptResponse:
        session = await self._live(session_id)
        cancels = session.cancels  # a cancel from now on is meant for this prompt too
        async with session.lock:
            stop = await self._turn(session, as_dicts(prompt), cancels)
            await session.store.flush()  # what the editor is told has happened is durable
            return PromptResponse(stop_reason=stop)

    async def _turn(self, session: Session, blocks: list[dict[str, Any]], cancels: int) -> str:
        text = user_text(blocks)
        command = session.commands.get(split_command(text)[0])
        stop, error = "cancelled", None
        if session.cancels == cancels:  # not cancelled while it waited behind the turn before it
            if command is None:
                await wait_for_servers(session)  # the first prompt waits for servers still starting
                try:
                    content = await model_content(session, blocks)
                except PromptRefused as refused:  # say why instead of a provider's 400; nothing is recorded
                    await self._emit(TextDelta(session.id, uuid.uuid4().hex, str(refused)))
                    return "end_turn"
                session.record({"role": "user", "content": content}, EntryMeta("prompt", blocks=redact_json(stored_blocks(blocks))))
                await self._report_failures(session)
                work = lambda: run_turn(self._turn_for(session))  # noqa: E731
            else:
                work = lambda: self._run_command(session, command, text)  # noqa: E731
            stop, error = await self._guarded(session, cancels, work)
        answer_open_calls(session, CANCELLED if stop == "cancelled" else INTERRUPTED)
        await self._report_failures(session)  # a server that died during the turn
        # After an error no stop reason reaches the editor (it gets the JSON-RPC error); hooks see "error".
        ended, message = ("error", str(error)) if error else (stop, None)
        name = command.name if command else None
        await run_hooks(self.callbacks.end_turn, SessionAccess(session), "end_turn", stop_reason=ended, error=message, command=name)
        stop = "cancelled" if session.cancels != cancels else stop  # also a cancel during end_turn work
        await self._finish_turn(session, "" if command else text, stop, error)
        if error:
            raise RequestError(-32603, str(error) if isinstance(error, CrowError) else f"Internal error: {error!r}")
        return stop

    async def _guarded(self, session: Session, cancels: int, work: Any) -> tuple[str, Exception | None]:
        """A turn or a slash command in the turn's cancel scope: (stop reason, the error that ended it)."""
        if session.cancels != cancels:  # arrived while the user message was being recorded
            return "cancelled", None
        try:
            with anyio.CancelScope() as session.scope:
                stop = await work()
            return ("cancelled" if session.scope.cancelled_caught else stop), None
        except Exception as exc:  # the one top-level handler of a prompt: the editor must get an answer
            if not isinstance(exc, CrowError):
                log.exception("turn failed")
            else:  # e.g. the model's final error after retries: crow.log keeps it for the user
                log.error("turn failed: %s", exc)
            return "end_turn", exc
        finally:
            session.scope = None

    def _turn_for(self, session: Session) -> Turn:
        return Turn(
            session,
            self.callbacks,
            Permissions(self.config.permissions),
            max_steps=self.config.max_steps,
            tool_timeout=self.config.timeouts.mcp_call + 5,
        )

    async def _finish_turn(self, session: Session, text: str, stop: str, error: BaseException | None) -> None:
        if error:
            await self._emit(ErrorOccurred(session.id, str(error), error))
        await self._emit(TurnFinished(session.id, stop))
        if title := session.take_title(text):
            await self._emit(TitleChanged(session.id, title))
            if self.config.titles.enabled:  # a better one from the model, in the background
                self._spawn(name_session(session, text, self.models, self.config.titles))

    async def _run_command(self, session: Session, command: SlashCommand, text: str) -> str:
        try:
            output = await command.handler(SessionAccess(session), split_command(text)[1])
        except Exception as exc:  # a command is plugin code: its failure is the prompt's clear error
            log.exception("command /%s failed", command.name)
            raise CommandError(f"/{command.name} failed: {type(exc).__name__}: {exc}") from exc
        if output:
            await self._emit(TextDelta(session.id, uuid.uuid4().hex, output))
        return "end_turn"

    # Sessions: plumbing (the public methods on open sessions are SessionControl's, in agent_sessions.py)
    async def _stored_entries(self, session_id: str) -> list[StoredMessage]:
        if session_id in self.sessions:  # open here: cancel its turn and let it record, then read
            await self.close_session(session_id)
        record = await self.store.get(session_id)
        if record is None:
            raise RequestError.resource_not_found(session_id)
        await self.leases.take(session_id)
        return repair_stored(self.store, record, await self.store.load(session_id))

    async def _lost(self, session_id: str) -> None:
        """Another process took the session over (this one stalled past the lease): stop writing it."""
        await self._release(session_id, "closed")

    async def _reopen(
        self, session_id: str, cwd: str, mcp_servers: list[Any] | None, directories: list[str] | None, *, replay: bool
    ) -> None:
        """A stored session back in memory and started; on load, its history replayed to the editor."""
        check_directories(cwd, directories)
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
        for update in replay_updates(entries) if self.conn else ():
            await self.conn.session_update(session_id=session_id, update=update)

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
        self.pool.opened(session.id, Opening(session.cwd, list(mcp_servers or []), list(session.additional_directories)))
        for callback in self.callbacks.all():
            offered: Sequence[SlashCommand] = callback.commands if isinstance(callback, OffersCommands) else ()
            for command in offered:
                session.commands[command.name] = command
        session.commands["mode"] = mode_command(self.options, self._session, lambda sid: self._options_changed(sid, mode=True))
        await run_hooks(self.callbacks.begin_session, SessionAccess(session), "begin_session", loaded=loaded)
        await self._evict(keep=session.id)

    def _after_response(self, session_id: str) -> None:
        """Runs once the session/new or session/load response has gone out (the SDK orders it so)."""
        self._spawn(self._announce(session_id))
        if not self._prewarmed:
            self._prewarmed = True
            self._spawn(off_loop(_prewarm))

    def _spawn(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _announce(self, session_id: str) -> None:
        held = self._held.pop(session_id, [])
        session = self.sessions.get(session_id)
        if session is None:
            return
        for event in held:
            await self._emit(event)
        await self._report_failures(session)
        if self.conn and (commands := all_commands(session)):
            await self.conn.session_update(session_id=session_id, update=commands_update(commands))

    async def _report_failures(self, session: Session) -> None:
        await report_failures(session)

    async def _emit(self, event: Event) -> None:
        if (held := self._held.get(event.session_id)) is not None:
            held.append(event)
            return
        if self._store is not None:
            await self._store.flush()  # what the editor is about to see is stored first (free when nothing is queued)
        for observer in self.observers:
            await call_user_code(observer, event)


def _prewarm() -> None:
    """Import the model client off the event loop while the user types: it takes most of a second.
    Not at initialize: a session/load right after it would replay slower, competing for the GIL."""
    import openai.types.chat  # noqa: F401


def repair_history(session: Session, entries: list[StoredMessage]) -> None:
    """Answer tool calls a killed process left open, so the history is valid for the model again."""
    session.history = list(entries)
    answer_open_calls(session, INTERRUPTED)
    session.history = repair_entries(session.history)  # damaged rows (orphans, bad ids or arguments) stay as stored

