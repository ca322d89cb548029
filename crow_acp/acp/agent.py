"""AcpAgent: the ACP handlers around sessions and the loop.

A plain class, deliberately not a subclass of acp.Agent: the SDK routes only methods that exist,
so anything crow does not implement answers "method not found" instead of a silent null.
The handlers are thin; the work is done by what the agent owns, each built here with what it needs:
    open_sessions  OpenSessions (sessions/registry.py): the open sessions, driven from Python, let go of
    opener         SessionOpener (sessions/opener.py): a session into memory, started, replayed
    options        SessionOptions (sessions/options.py): model, mode and thinking level, and /mode
    turns          TurnRunner (prompt/turn.py): one prompt's turn or slash command
    outbox         Outbox (updates/outbox.py): events to the editor, then to the observers
    ownership      Ownership (sessions/ownership.py): whose sessions the caller may touch (act_for sets who)
and the leases, the model profiles and the store. Bases: DrivenFromPython (driven.py), what Python drives
sessions with, and ServedToUsers (served.py), who it serves: session/list, delete and the "_" requests.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

from acp.schema import (
    AuthenticateResponse,
    ForkSessionResponse,
    InitializeResponse,
    LoadSessionResponse,
    LogoutResponse,
    NewSessionResponse,
    PromptResponse,
    ResumeSessionResponse,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from ..api import CrowCallbacks
from ..config import Config, load_config
from ..core.session import Session
from ..events import Observer
from ..model.client import ModelClient
from ..model.profiles import Models
from ..store import SessionStore, open_store
from ..util.secrets import protect
from .agent_parts import AgentParts, Instructions, configured
from .driven import DrivenFromPython
from .prompt.message import as_dicts
from .prompt.turn import TurnRunner
from .rpc.capabilities import initialize_response
from .rpc.shapes import ClientFeatures
from .run import RunsInProcess
from .served import ServedToUsers
from .sessions.leases import Leases
from .sessions.opener import SessionOpener
from .sessions.options import MODE_OPTION, SessionOptions
from .sessions.ownership import Ownership
from .sessions.registry import OpenSessions, SessionPool
from .updates.editor_link import EditorLink
from .updates.outbox import Outbox
from .updates.shapes import AcpUpdates

log = logging.getLogger(__name__)


class AcpAgent(DrivenFromPython, RunsInProcess, ServedToUsers):
    def __init__(
        self,
        model: str | ModelClient | Config | None = None,
        *,
        instructions: Instructions | None = None,
        tools: Sequence[Any] = (),
        callbacks: CrowCallbacks | None = None,
        mcp_servers: Sequence[Any] = (),
        config: Config | None = None,
        store: SessionStore | None = None,
        name: str = "crow",
    ) -> None:
        """`model`: a model id, a profile name or a client (FunctionModel); a Config is the older AcpAgent(config)."""
        if isinstance(model, Config):
            config, model = config or model, None
        given = model if isinstance(model, str) else None
        self.config = configured(config or load_config(), given, mcp_servers)
        protect(self.config)  # commands, MCP servers, the store and the logs never get the model keys
        self.name = name
        self.parts = AgentParts(tools, instructions)
        self.callbacks = self.parts.around(callbacks or CrowCallbacks())
        self.editor = EditorLink()
        self._store, self._owns_store = store, store is None
        self._background: set[asyncio.Task[Any]] = set()
        self._closers: list[Callable[[], Awaitable[None]]] = []
        self.models = Models(self.config)
        # Taken over by another process, or opened by another agent of this one: either way, closed here.
        self.leases = Leases(lambda: self.store, self.close_session, self.close_session)
        self.outbox = Outbox(self.leases, store_opened=lambda: self._store is not None)
        self.open_sessions = OpenSessions(SessionPool(self.config.sessions), self.leases, self._current_callbacks)
        self.options = SessionOptions(self.models, self.config, self.open_sessions, self.editor)
        self.opener = SessionOpener(
            config=self.config, models=self.models, store=lambda: self.store, callbacks=self._current_callbacks,
            sessions=self.open_sessions, options=self.options, outbox=self.outbox, editor=self.editor,
            spawn=self._spawn,
        )  # fmt: skip
        self.ownership = Ownership(lambda: self.store)
        self.extensions = self.served_extensions()
        self.opener.may_load = functools.partial(self.ownership.require, need="read")  # inside the load (opener.py)
        self.turns = TurnRunner(self.config, self.models, self._current_callbacks, self.outbox.emit, self._spawn)
        self.turns.checkpoints = self.opener.checkpoints
        if model is not None and not isinstance(model, str):
            self.models.use(model)

    # Composition
    def set_callbacks(self, callbacks: CrowCallbacks) -> None:
        callbacks.check()  # HookSignatureError names a callback whose keyword its list never passes
        self.callbacks = self.parts.around(callbacks)  # the agent's own tools and instructions stay

    def _current_callbacks(self) -> CrowCallbacks:
        """What the collaborators call for the callbacks: set_callbacks may replace them after they are built."""
        return self.callbacks

    def close_at_shutdown(self, close: Callable[[], Awaitable[None]]) -> None:
        """Call `close` when this agent shuts down: for what its hooks built that outlives a session (the
        delegate tool's helpers, a foreign helper's process), since `crow serve` outlives the connection."""
        self._closers.append(close)

    def add_observer(self, observer: Observer) -> None:
        self.outbox.observers.append(observer)

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

    @property
    def sessions(self) -> dict[str, Session]:
        """The sessions open in this agent, by id."""
        return self.open_sessions.by_id

    async def shutdown(self) -> None:
        """Close every session's MCP servers and the model client (the editor closed stdin). Every queued write
        lands and the leases go; a store the caller gave stays open for them."""
        for failed in await asyncio.gather(*(close() for close in self._closers), return_exceptions=True):
            if isinstance(failed, BaseException):  # one helper's failure must not keep the others (or us) open
                log.warning("closing at shutdown failed: %r", failed)
        sessions = await self.open_sessions.release_all()
        for task in list(self._background):  # a title still being asked must not outlive the model client
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        await self.models.close()
        if (store := self._store) is not None:
            await asyncio.gather(*(self.leases.give_back(session.id) for session in sessions))
            await self.leases.close()
            if self._owns_store:
                self._store = None
            await (store.close() if self._owns_store else store.flush())

    def _spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ACP: connection
    def on_connect(self, conn: Any) -> None:
        self.editor.conn = conn
        self.outbox.editor = AcpUpdates(self.editor)

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_features: ClientFeatures | None = None,
        **_: Any,
    ) -> InitializeResponse:
        self.editor.capabilities = client_capabilities
        self.editor.features = client_features or ClientFeatures()
        return initialize_response(protocol_version, client_capabilities)

    # ACP: authentication (auth.py)
    async def authenticate(self, method_id: str, **_: Any) -> AuthenticateResponse:
        self.opener.gate.authenticate(method_id)
        return AuthenticateResponse()

    async def logout(self, **_: Any) -> LogoutResponse:
        self.opener.gate.logout()
        return LogoutResponse()

    def require_sign_in(self) -> None:
        """Sessions answer auth_required (-32000) until crow's model has a usable key (auth_gate.py)."""
        self.opener.gate.enforced = True

    # ACP: sessions
    async def new_session(
        self,
        cwd: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        system_prompt: Any = None,
        **_: Any,
    ) -> Any:
        prompt = self.opener.admit(cwd, additional_directories, system_prompt)
        owner = self.ownership.who().user
        session_id = await self.opener.new(cwd, mcp_servers, additional_directories, self.name, prompt, owner)
        return NewSessionResponse(
            session_id=session_id, config_options=self.config_options(session_id), modes=self._modes(session_id)
        )

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        system_prompt: Any = None,
        **_: Any,
    ) -> Any:
        prompt = self.opener.admit(cwd, additional_directories, system_prompt)
        await self.opener.reopen(session_id, cwd, mcp_servers, additional_directories, replay=True, prompt=prompt)
        return LoadSessionResponse(config_options=self.config_options(session_id), modes=self._modes(session_id))

    async def resume_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        system_prompt: Any = None,
        **_: Any,
    ) -> Any:
        prompt = self.opener.admit(cwd, additional_directories, system_prompt)
        await self.opener.reopen(session_id, cwd, mcp_servers, additional_directories, replay=False, prompt=prompt)
        return ResumeSessionResponse(config_options=self.config_options(session_id), modes=self._modes(session_id))

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        system_prompt: Any = None,
        **_: Any,
    ) -> Any:
        """A new session with this one's history so far (and system prompt, unless it gives one), independent."""
        prompt = self.opener.admit(cwd, additional_directories, system_prompt)
        grant = await self.ownership.require(session_id, "read")
        fork_id = await self.opener.fork(session_id, cwd, mcp_servers, additional_directories, prompt)
        await self.ownership.forked(fork_id, grant)
        return ForkSessionResponse(session_id=fork_id, config_options=self.config_options(fork_id))

    async def close_session(self, session_id: str, **_: Any) -> None:
        """Stop the session's work (as session/cancel does), then let go of it (end_session runs)."""
        await self.open_sessions.release(session_id, "closed")

    async def cancel(self, session_id: str, **_: Any) -> None:
        """Stop the running turn, and any prompt already waiting behind it (only one the caller may prompt runs)."""
        self.open_sessions.cancel(session_id)

    # ACP: config options and modes
    async def set_config_option(self, config_id: str, session_id: str, value: Any, **_: Any) -> Any:
        """The editor's pickers (model, mode, ...): set for this session, remembered, acknowledged."""
        await self.ownership.require(session_id, "full")
        self.options.apply(await self.opener.live(session_id), config_id, value)
        await self.options.changed(session_id, mode=config_id == MODE_OPTION)
        return SetSessionConfigOptionResponse(config_options=self.config_options(session_id))

    async def set_session_mode(self, mode_id: str, session_id: str, **_: Any) -> SetSessionModeResponse:
        """The older mode API: the same modes as the "mode" config option."""
        await self.ownership.require(session_id, "full")
        self.options.apply(await self.opener.live(session_id), MODE_OPTION, mode_id)
        await self.options.changed(session_id, mode=True)
        return SetSessionModeResponse()

    # ACP: prompt
    async def prompt(self, prompt: list[Any], session_id: str, **_: Any) -> PromptResponse:
        await self.leases.refuse_if_taken_over(session_id)
        session = await self.opener.live(session_id)  # not open here: as for an unknown id, another user's too
        cancels = session.control.cancels  # a cancel from now on is meant for this prompt too
        grant = await self.ownership.require(session_id, "full")  # a share taken back holds at once
        async with session.control.lock:  # FIFO: queued prompts run in arrival order (promptQueueing)
            # What the editor is told has happened is durable; a lost lease ends the prompt with its error.
            with self.ownership.acting_for_owner(grant):  # what the turn opens is the owner's (ownership.py)
                stop = await self.leases.durable(session, self.turns.run(session, as_dicts(prompt), cancels))
            return PromptResponse(stop_reason=stop)

    def config_options(self, session_id: str) -> list[Any]:
        """The session's config options for the editor (sessions/options.py)."""
        return self.options.build(self.sessions[session_id])

    def _modes(self, session_id: str) -> SessionModeState:
        """The session's modes, for editors of the older mode API."""
        return self.options.mode.state(self.sessions[session_id])
