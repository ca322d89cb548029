"""A foreign member's turn: the hand-off text given to its session, its stream shown, its reply stored.

RelayTurns takes the place of the model loop in the member's TurnRunner (acp/prompt/turn.py), so the
turn has the same cancel scope, end_turn hooks (bridges) and error handling as a crow member's. Its
stop reason is the member's. A crash, a broken wire or silence past `timeouts.member_idle` fails the
turn with the reason (MemberFailed, a CrowError); a cancel reaches the member as session/cancel.

The foreign session id is kept in the crow session's context (FOREIGN_SESSION), so a reload (or a
restarted member) resumes it with session/resume or session/load when the member advertises one,
and otherwise starts a new one and says so in the transcript.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from acp import RequestError, text_block, update_agent_message
from acp.schema import AgentMessageChunk

from ...acp.prompt.turn import Spawn, TurnRunner
from ...core.session import Session
from ...errors import CrowError
from .link import Link

if TYPE_CHECKING:
    from ...acp.updates.editor_link import EditorLink
    from ...api import CrowCallbacks
    from ...config import Config
    from ...events import Event
    from ...model.profiles import Models

log = logging.getLogger(__name__)
FOREIGN_SESSION = "foreign_session"
"""Context key: the member's own session id for this crow session."""
CANCEL_WAIT = 5.0
"""Seconds a cancelled member has to answer its prompt before the link is dropped."""


class MemberFailed(CrowError):
    """A foreign member failed a turn: it died, broke the wire, refused, or went silent."""


class TurnHost(Protocol):
    """What a turn needs of its member (member.py ForeignAgent)."""

    name: str
    editor: EditorLink

    async def link(self, session: Session) -> Link: ...
    def editor_servers(self, session: Session, link: Link) -> list[Any]: ...
    def open_turn(self, sid: str) -> TurnText: ...
    def close_turn(self, sid: str) -> None: ...


class TurnText:
    """What one turn of a member streamed: its reply text, bounded in updates and characters."""

    MAX_UPDATES = 50_000

    def __init__(self, max_chars: int) -> None:
        self.message_id = uuid.uuid4().hex
        self.parts: list[str] = []
        self._chars, self._max_chars, self._updates = 0, max_chars, 0
        self.dropped = False
        self.last = time.monotonic()
        """When the member last showed it is alive (an update, a permission question asked or answered)."""

    def touch(self) -> None:
        self.last = time.monotonic()

    def take(self, update: Any) -> bool:
        """Whether to forward `update`; past a bound everything else of the turn is dropped (logged once)."""
        self.touch()
        self._updates += 1
        text = update.content.text if isinstance(update, AgentMessageChunk) and update.content.type == "text" else ""
        self._chars += len(text)
        if self._updates > self.MAX_UPDATES or self._chars > self._max_chars:
            if not self.dropped:
                log.warning("member flooded its turn: the rest of its updates are dropped")
            self.dropped = True
            return False
        self.parts.append(text)
        return True

    @property
    def text(self) -> str:
        return "".join(self.parts)


class RelayTurns(TurnRunner):
    """A member's turn: the foreign agent's turn on the hand-off text."""

    def __init__(
        self,
        agent: TurnHost,
        config: Config,
        models: Models,
        callbacks: Callable[[], CrowCallbacks],
        emit: Callable[[Event], Awaitable[None]],
        spawn: Spawn,
    ) -> None:
        super().__init__(config, models, callbacks, emit, spawn)
        self._agent = agent

    @property
    def model_titles(self) -> bool:
        return False  # crow's model is never called for a member that is not crow

    @model_titles.setter
    def model_titles(self, _: bool) -> None:
        pass

    async def model_turn(self, session: Session, blocks: list[dict[str, Any]]) -> str:
        link = await self._agent.link(session)
        foreign = await self._foreign_session(link, session)
        turn = self._agent.open_turn(session.id)
        try:
            stop = await self._prompt(link, foreign, blocks, turn)
        finally:
            self._agent.close_turn(session.id)
            if link.terminals is not None:  # none outlives the turn, however it ended (shielded from a cancel)
                await link.terminals.release_all(session.id)
            if turn.text:
                session.record({"role": "assistant", "content": turn.text})
        return stop

    async def _prompt(self, link: Link, foreign: str, blocks: list[dict[str, Any]], turn: TurnText) -> str:
        idle = self.config.timeouts.member_idle
        request = asyncio.ensure_future(link.conn.prompt(session_id=foreign, prompt=blocks))
        try:
            while not request.done():
                await asyncio.wait({request}, timeout=max(0.05, idle - (time.monotonic() - turn.last)))
                if not request.done() and time.monotonic() - turn.last >= idle:
                    request.cancel()
                    await link.close()
                    raise MemberFailed(f"member {self._agent.name} was silent for {idle:g}s")
            answer = request.result()
        except asyncio.CancelledError:
            with anyio.CancelScope(shield=True):
                await self._cancel(link, foreign, request)
            raise
        except (RequestError, ConnectionError) as exc:
            why = await reason(link, exc)
            if isinstance(exc, ConnectionError):
                await link.close()
            raise MemberFailed(f"member {self._agent.name} failed: {why}") from exc
        return str(answer.stop_reason)

    async def _cancel(self, link: Link, foreign: str, request: asyncio.Future[Any]) -> None:
        """session/cancel, then its answer (stop reason "cancelled") for CANCEL_WAIT seconds, else the link goes."""
        try:
            await link.conn.cancel(session_id=foreign)
            await asyncio.wait_for(request, CANCEL_WAIT)
        except Exception:  # the isolation boundary of a cancel: whatever it did, the turn is over
            log.warning("member %s did not end its cancelled turn; its link is closed", self._agent.name)
            request.cancel()
            await link.close()

    async def _foreign_session(self, link: Link, session: Session) -> str:
        known = session.context.get(FOREIGN_SESSION)
        if isinstance(known, str) and known in link.sessions:
            return known
        try:
            sid = await asyncio.wait_for(self._open_session(link, session, known), self.config.timeouts.member_start)
        except (RequestError, ConnectionError, TimeoutError) as exc:
            raise MemberFailed(
                f"member {self._agent.name} could not open a session: {await reason(link, exc)}"
            ) from exc
        link.sessions[sid] = session.id
        if sid != known:
            session.context[FOREIGN_SESSION] = sid
            session.save()
        return sid

    async def _open_session(self, link: Link, session: Session, known: Any) -> str:
        if isinstance(known, str) and await self._reopen(link, session, known):
            return known
        servers = self._agent.editor_servers(session, link)
        answer = await link.conn.new_session(cwd=session.cwd, mcp_servers=servers)
        if isinstance(known, str):
            await self._say(session, f"{self._agent.name} cannot resume its earlier session: it starts afresh.")
        return str(answer.session_id)

    async def _reopen(self, link: Link, session: Session, known: str) -> bool:
        """Its earlier session again, with session/resume or session/load (whose replay is not shown: no
        turn is open, and crow replays its own record); False when it offers neither or refuses."""
        caps = link.capabilities
        resume = caps is not None and caps.session_capabilities is not None and caps.session_capabilities.resume
        load = caps is not None and bool(caps.load_session)
        if not (resume or load):
            return False
        link.sessions[known] = session.id
        servers = self._agent.editor_servers(session, link)
        try:
            if resume:
                await link.conn.resume_session(cwd=session.cwd, session_id=known, mcp_servers=servers)
            else:
                await link.conn.load_session(cwd=session.cwd, session_id=known, mcp_servers=servers)
        except RequestError as exc:
            log.warning("member %s refused to reopen session %s: %s", self._agent.name, known, exc)
            del link.sessions[known]
            return False
        return True

    async def _say(self, session: Session, text: str) -> None:
        if self._agent.editor.conn is not None:
            update = update_agent_message(text_block(f"\n\n_{text}_\n\n"))
            await self._agent.editor.conn.session_update(session_id=session.id, update=update)


async def reason(link: Link, exc: BaseException) -> str:
    return await link.failure() if isinstance(exc, ConnectionError) else describe(exc)


def describe(exc: BaseException) -> str:
    if isinstance(exc, RequestError):
        return f"{exc} (JSON-RPC error {exc.code})"
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    return str(exc) or type(exc).__name__
