"""How an AcpAgent brings a session into memory: from the store with its history made valid again,
its MCP servers started, its commands offered and begin_session run; on session/load, its history
replayed to the editor; after the response, what was held back sent.

AcpAgent owns a SessionOpener; session/new, load, resume and fork (agent.py) call it, and so does
a prompt for a session evicted meanwhile (`live`).
"""

from __future__ import annotations

import asyncio
import functools
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from acp import RequestError

from ...api import CrowCallbacks, OffersCommands, SlashCommand
from ...core.cut_turn import CONTINUE, continue_command, cut_off
from ...core.hooks import run_hooks
from ...core.session import CLIENT_PROMPT, ClientPrompt, Session
from ...core.session_view import SessionView
from ...history import StoredMessage
from ...mcp.host import McpHost, server_specs
from ...mcp.specs import check_servers
from ...policy.remembered import bind_to_roots
from ...store import LOCAL_USER, Grant, SessionRecord
from ...store.read_only import ReadOnlyStore
from ...timeline.timeline import Checkpoints
from ..prompt.mcp import attach as attach_mcp
from ..questions.ask_user import offer_questions
from ..updates.shapes import replay_with_plans
from ..updates.warnings import cut_mark
from .announce import Announcer
from .auth_gate import CredentialGate
from .directories import check_directories, check_editor_directories
from .ownership import anyone
from .registry import Opening
from .rewind import Rewinds
from .stored import copy_session, repair_history, repair_stored
from .system_prompt import client_prompt

if TYPE_CHECKING:
    from ...config import Config
    from ...model.profiles import Models
    from ...store import SessionStore
    from ..prompt.turn import Spawn
    from ..updates.editor_link import EditorLink
    from ..updates.outbox import Outbox
    from .options import SessionOptions
    from .registry import OpenSessions


class SessionOpener:
    def __init__(
        self,
        *,
        config: Config,
        models: Models,
        store: Callable[[], SessionStore],
        callbacks: Callable[[], CrowCallbacks],
        sessions: OpenSessions,
        options: SessionOptions,
        outbox: Outbox,
        editor: EditorLink,
        spawn: Spawn,
    ) -> None:
        self.config, self.models = config, models
        self._store = store
        """The agent's store, opened when first needed (or the one `use_store` gave it)."""
        self._callbacks = callbacks
        """The agent's callbacks as they are now (set_callbacks may replace them after this is built)."""
        self.sessions = sessions
        self.options = options
        self.outbox = outbox
        self.editor = editor
        self._loading: dict[str, asyncio.Event] = {}  # sessions being reopened: a prompt waits for them
        self.may_load: Callable[[str], Awaitable[object]] = anyone
        """Raises for a session the caller may not load (AcpAgent sets it: ownership.py). Asked once the load is
        under way, so a prompt sent meanwhile waits for the load's answer (and fails as it does)."""
        self._spawn = spawn
        self.after_response = Announcer(config, sessions, outbox, editor, spawn).after_response
        """Runs once the session/new or session/load response has gone out (announce.py)."""
        self.gate = CredentialGate(config, models)
        """session/new, load, resume and fork answer auth_required while crow's model has no key."""
        self.checkpoints = Checkpoints(config.home, config.checkpoints)
        """The sessions' file checkpoints (timeline/): taken by the turns, put back by /rewind."""
        sessions.released.append(self.checkpoints.close)  # a session leaving memory: its change journal goes
        self.rewinds = Rewinds(store, sessions, outbox, options, self.checkpoints, config.permissions.timeout)
        self.runs_tools = True
        """False for an agent whose turns another agent runs (a ForeignAgent): its sessions start no MCP
        servers in crow, which nothing would call."""

    async def new(
        self,
        cwd: str,
        mcp_servers: list[Any] | None,
        directories: list[str] | None,
        agent: str,
        prompt: ClientPrompt | None = None,
        owner: str = LOCAL_USER,
    ) -> str:
        """A new session of `owner`, stored, leased and started; its id. `prompt`: the client's system prompt."""
        check_directories(cwd, directories)
        check_servers(mcp_servers)
        session_id = uuid.uuid4().hex
        now = time.time()
        data: dict[str, Any] = {
            "additional_directories": directories or [],
            "agent": agent,
            "mode": self.config.permissions.default_mode,
        }
        if prompt is not None:
            data[CLIENT_PROMPT] = prompt.to_json()
        self._store().create(SessionRecord(session_id, cwd, None, now, now, data, owner))
        await self.sessions.leases.take(session_id)
        self.outbox.hold(session_id)  # nothing may reach the editor before the session/new response
        session = await self._restore(session_id, cwd, [], None, None, self._store())
        await self._start(session, mcp_servers, loaded=False)
        self.after_response(session_id)
        return session_id

    def admit(self, cwd: Any, directories: Any, system_prompt: Any) -> ClientPrompt | None:
        """What an editor's session/new, load, resume or fork asks for, checked before any work: its
        directories (the cwd an existing one) and its system prompt (-32602 naming what is wrong), then a usable
        model key (-32000, auth_required)."""
        check_editor_directories(cwd, directories)
        prompt = client_prompt(system_prompt)
        if self.runs_tools:  # a foreign agent's turns use its own model
            self.gate.require()
        return prompt

    async def fork(
        self, source_id: str, cwd: str, mcp_servers: list[Any] | None, directories: list[str] | None, prompt: Any
    ) -> str:
        """A copy of the stored session (its owner's too), open here and started; its id."""
        check_servers(mcp_servers)
        fork_id = await copy_session(self._store(), source_id, cwd, directories)
        await self.reopen(fork_id, cwd, mcp_servers, directories, replay=False, prompt=prompt, asked=False)
        return fork_id

    async def live(self, session_id: str) -> Session:
        """The session in memory (once a load under way is done); one evicted for room is opened again."""
        if (loading := self._loading.get(session_id)) is not None:
            await loading.wait()  # a prompt sent during its session/load waits for it, not -32002
        pool = self.sessions.pool
        if not self.sessions.is_open(session_id) and (opening := pool.evicted.get(session_id)):
            await self.reopen(session_id, opening.cwd, opening.mcp_servers, opening.directories, replay=False)
        pool.touch(session_id)
        if pool.config.idle_minutes is not None:  # the idle ones go in the background, not before this prompt
            self._spawn(self.sessions.evict(keep=session_id))
        return self.sessions.get(session_id)

    async def _stored_entries(self, session_id: str, store: SessionStore) -> list[StoredMessage]:
        if self.sessions.is_open(session_id):  # open here: cancel its turn and let it record, then read
            await self.sessions.release(session_id, "closed")
        record = await store.get(session_id)
        if record is None:
            raise RequestError.resource_not_found(session_id)
        if not isinstance(store, ReadOnlyStore):
            await self.sessions.leases.take(session_id)
        return repair_stored(store, record, await store.load(session_id))

    async def reopen(
        self,
        session_id: str,
        cwd: str,
        mcp_servers: list[Any] | None,
        directories: list[str] | None,
        *,
        replay: bool,
        prompt: ClientPrompt | None = None,
        asked: bool = True,
    ) -> None:
        """A stored session back in memory and started; on load, its history replayed to the editor.
        `prompt`: the client's system prompt, which replaces the stored one (None keeps it). `asked`: a caller
        asked for it (load, resume: may_load decides); a fork crow just made is its own to open."""
        check_directories(cwd, directories)
        check_servers(mcp_servers)
        loaded = self._loading[session_id] = asyncio.Event()
        try:
            grant = await self.may_load(session_id) if asked else None
            read_only = isinstance(grant, Grant) and grant.access != "full"  # a reader's copy, in memory only
            await self._reopen(session_id, cwd, mcp_servers, directories, replay, prompt, read_only)
        except asyncio.CancelledError:  # its request cancelled ($/cancel_request): not left half-open
            await asyncio.shield(self._abandon(session_id))  # in a task of its own, which no cancel reaches
            raise
        finally:
            loaded.set()
            if self._loading.get(session_id) is loaded:
                del self._loading[session_id]

    async def _abandon(self, session_id: str) -> None:
        """A reopen cut short: the session closed again and its lease given back, so a later load works."""
        self.outbox.stop_holding(session_id)
        if self.sessions.is_open(session_id):
            await self.sessions.release(session_id, "closed")
        else:
            await self.sessions.leases.give_back(session_id)

    async def _reopen(
        self,
        session_id: str,
        cwd: str,
        mcp_servers: list[Any] | None,
        directories: list[str] | None,
        replay: bool,
        prompt: ClientPrompt | None,
        read_only: bool,
    ) -> None:
        store = ReadOnlyStore(self._store()) if read_only else self._store()  # read_only.py says why
        entries = await self._stored_entries(session_id, store)
        self.outbox.hold(session_id)  # callbacks' reports follow the replay and the response, as on session/new
        session = await self._restore(session_id, cwd, entries, directories, prompt, store)
        if not read_only and await self.rewinds.recover(session):  # a rewind a kill cut short, finished first
            entries = await self._store().load(session_id)
        if (how := cut_off(session.history)) is not None:  # crow stopped mid-turn: held, so said after the replay
            await self.outbox.emit(cut_mark(session_id, how))
        # The rows read, plus the results repair_history gave to calls a killed process left open.
        stored = {entry.row_id for entry in entries}
        shown = (
            [*entries, *(e for e in session.history if e.row_id not in stored and e.row_id is not None)]
            if replay
            else []
        )
        # Replay while the MCP servers start: both take a while, and neither needs the other.
        await asyncio.gather(self._replay(session_id, shown), self._start(session, mcp_servers, loaded=True))
        self.after_response(session_id)

    async def _replay(self, session_id: str, entries: list[StoredMessage]) -> None:
        if (sink := self.editor.replay_sink()) is not None:
            await sink.send_updates(session_id, replay_with_plans(entries, self.editor.features))

    async def _restore(
        self,
        session_id: str,
        cwd: str,
        entries: list[StoredMessage],
        directories: list[str] | None,
        prompt: ClientPrompt | None,
        store: SessionStore,
    ) -> Session:
        """The session object with its stored history (valid for the model again), not yet started."""
        if self.sessions.is_open(session_id):  # loaded again while open: finish with the live one first
            await self.sessions.release(session_id, "closed")
        record = await store.get(session_id)
        assert record is not None
        if directories is not None:  # the editor's roots now, over the ones stored
            record.data["additional_directories"] = directories
        if prompt is not None:  # the client's system prompt now, over the one stored
            record.data[CLIENT_PROMPT] = prompt.to_json()
        if directories is not None or prompt is not None:
            store.update(session_id, data=record.data)
        timeouts = self.config.timeouts
        session = Session(
            id=session_id,
            cwd=cwd,
            store=store,
            model=self.models.client(record.data.get("model")),
            emit=self.outbox.emit,
            mcp=McpHost(cwd=cwd, connect_timeout=timeouts.mcp_connect, call_timeout=timeouts.mcp_call),
            additional_directories=record.data.get("additional_directories", []),
            data=record.data,
            title=record.title,
            client=self.editor.conn,
            client_capabilities=self.editor.capabilities,
            last_row=max((entry.row_id or 0 for entry in entries), default=0),
        )
        repair_history(session, [e for e in entries if e.active])
        offer_questions(session, self.editor, timeouts.elicitation)
        self.sessions.add(session)
        return session

    async def _start(self, session: Session, mcp_servers: list[Any] | None, *, loaded: bool) -> None:
        """Connect the MCP servers, offer the commands and run begin_session."""
        from ...editor.sandbox import server_prefix

        confine = functools.partial(server_prefix, self.config.sandbox, cwd=session.cwd)
        if self.runs_tools:
            McpHost.of(session.mcp).start(
                server_specs(mcp_servers or [], self.config.mcp_servers, confine)
            )  # in the background
        attach_mcp(session)
        session.data.setdefault("mode", self.config.permissions.default_mode)  # sessions from before modes
        bind_to_roots(session)  # "always" answers given under other roots (a fork or load elsewhere) go
        self.sessions.pool.opened(
            session.id, Opening(session.cwd, list(mcp_servers or []), list(session.additional_directories))
        )
        callbacks = self._callbacks()
        for callback in callbacks.all():
            offered: Sequence[SlashCommand] = callback.commands if isinstance(callback, OffersCommands) else ()
            for command in offered:
                session.commands[command.name] = command
        session.commands |= {"mode": self.options.mode_command(), CONTINUE: continue_command()}
        session.commands["rewind"] = self.rewinds.command()
        await run_hooks(callbacks.begin_session, SessionView(session), "begin_session", loaded=loaded)
        await self.sessions.evict(keep=session.id)
