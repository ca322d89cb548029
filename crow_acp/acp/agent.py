"""AcpAgent: the ACP handlers around sessions and the loop.

A plain class, deliberately not a subclass of acp.Agent: the SDK routes only methods that exist,
so anything crow does not implement answers "method not found" instead of a silent null.
The handlers are here; what they call is in the classes AcpAgent inherits, one job each:
PromptTurns (prompt_turn.py: one prompt's turn or slash command) and under it SessionControl
(agent_sessions.py: open sessions driven from Python); SessionOpening (session_open.py: a session
into memory and replayed), OptionHandlers under it (session_options.py: config options and
modes), and SessionLifecycle under that (session_pool.py: eviction, close, end_session).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

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

from ..api import CrowCallbacks
from ..config import Config, load_config
from ..core.hooks import call_user_code
from ..core.session import Session
from ..events import Event, Observer
from ..mcp.specs import check_servers
from ..model.client import ModelClient
from ..model.profiles import Models
from ..store import SessionRecord, SessionStore, open_store
from ..util.secrets import protect
from .capabilities import initialize_response
from .fork import copy_session
from .leases import Leases
from .prompt_blocks import as_dicts
from .prompt_turn import PromptTurns
from .session_open import SessionOpening
from .session_options import SessionOptions
from .session_pool import SessionPool, end_session
from .updates import AcpUpdates
from .wire import check_directories


class AcpAgent(PromptTurns, SessionOpening):
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
        callbacks.check()  # HookSignatureError names a callback whose keyword its list never passes
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
        for task in list(self._background):  # a title still being asked must not outlive the model client
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
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
        check_servers(mcp_servers)
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
        check_servers(mcp_servers)
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
        self.leases.refuse_if_taken_over(session_id)
        session = await self._live(session_id)
        cancels = session.cancels  # a cancel from now on is meant for this prompt too
        async with session.lock:
            # What the editor is told has happened is durable; a lost lease ends the prompt with its error.
            stop = await self.leases.durable(session, self._turn(session, as_dicts(prompt), cancels))
            return PromptResponse(stop_reason=stop)

    async def _lost(self, session_id: str) -> None:
        """Another process took the session over (this one stalled past the lease): stop writing it."""
        await self._release(session_id, "closed")

    def _spawn(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _emit(self, event: Event) -> None:
        if (held := self._held.get(event.session_id)) is not None:
            held.append(event)
            return
        # What the editor is about to see is stored first (free when nothing is queued); nothing more
        # of a session another process took over reaches it.
        if self._store is not None and not await self.leases.flushed(event.session_id):
            return
        for observer in self.observers:
            await call_user_code(observer, event)

