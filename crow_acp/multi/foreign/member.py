"""ForeignAgent: a member of a graph that is another ACP agent, crow being its client.

It is an AcpAgent in everything a graph needs (its own crow session per editor session, stored
hand-offs and replies, bridges, the blackboard, modes), except the turn: RelayTurns gives the
hand-off text to the foreign agent's session with session/prompt, forwards what it streams to
crow's session, and stores its reply. Its stop reason is the turn's. A crash, a broken wire or
silence past `timeouts.member_idle` fails the turn with the reason (a CrowError), as a failing
crow member's turn fails; a cancel reaches it as session/cancel.

The foreign session id is kept in the crow session's context (FOREIGN_SESSION), so a reload (or a
restarted member) resumes it with session/resume or session/load when the member advertises one,
and otherwise starts fresh and says so in the transcript.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Any

import anyio
from acp import PROTOCOL_VERSION, RequestError, text_block, update_agent_message
from acp.schema import AgentMessageChunk, ClientCapabilities, Implementation

from ...acp.agent import AcpAgent
from ...acp.prompt_turn import TurnRunner
from ...config import Config
from ...core.session import Session
from ...errors import CrowError
from ...store import SessionStore
from .client import MemberClient
from .link import Link, Target
from .nomodel import NoModel

log = logging.getLogger(__name__)
FOREIGN_SESSION = "foreign_session"
"""Context key: the member's own session id for this crow session."""
SHOWN = {"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"}
"""What of a member's stream the editor sees; its own modes, commands, titles and usage are its business."""
CANCEL_WAIT = 5.0
"""Seconds a cancelled member has to answer its prompt before the link is dropped."""


class MemberFailed(CrowError):
    """A foreign member failed a turn: it died, broke the wire, refused, or went silent."""


class ForeignAgent(AcpAgent):
    def __init__(self, target: Target, *, name: str, config: Config | None = None, store: SessionStore | None = None):
        super().__init__(config, store, name=name)
        self.target = target
        self.models.use(NoModel(name))
        self.turns = RelayTurns(self)
        self._link: Link | None = None
        self._opening = asyncio.Lock()
        self._turns: dict[str, TurnText] = {}

    async def shutdown(self) -> None:
        if self._link is not None:
            await self._link.close()
        await super().shutdown()

    async def link(self, session: Session) -> Link:
        """The live link, (re)started when there is none or it ended."""
        async with self._opening:
            link = self._link
            if link is None or link.closed:
                link = self._link = await self._open(session)
            return link

    async def _open(self, session: Session) -> Link:
        link = Link(self.name, self._deliver)
        client = MemberClient(
            self.name, self.editor, link.sessions, self.open_sessions.get, self.config.permissions.timeout
        )
        client.touch = self._touch
        try:
            await link.open(self.target, client, session.cwd)
        except Exception as exc:  # isolation boundary: whatever starting or connecting raised is the node's reason
            await link.close()
            raise MemberFailed(f"member {self.name} did not start: {_describe(exc)}") from exc
        try:
            answer = await asyncio.wait_for(
                link.conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=client.capabilities(),
                    client_info=Implementation(name="crow", version="member"),
                ),
                self.config.timeouts.member_start,
            )
        except (RequestError, ConnectionError, TimeoutError) as exc:
            reason = await _reason(link, exc)
            await link.close()
            raise MemberFailed(f"member {self.name} did not start: {reason}") from exc
        link.capabilities = answer.agent_capabilities
        return link

    async def _deliver(self, sid: str, update: Any) -> None:
        turn = self._turns.get(sid)
        if turn is None or update.session_update not in SHOWN or not turn.take(update):
            return
        if isinstance(update, AgentMessageChunk) and update.message_id is None:
            update = update.model_copy(update={"message_id": turn.message_id})
        if self.editor.conn is not None:
            await self.editor.conn.session_update(session_id=sid, update=update)

    def _touch(self, sid: str) -> None:
        if (turn := self._turns.get(sid)) is not None:
            turn.touch()

    def open_turn(self, sid: str) -> TurnText:
        turn = self._turns[sid] = TurnText(self.config.limits.reply_chars)
        return turn

    def close_turn(self, sid: str) -> None:
        self._turns.pop(sid, None)


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

    def __init__(self, agent: ForeignAgent) -> None:
        super().__init__(agent.config, agent.models, agent._current_callbacks, agent.outbox.emit, agent._spawn)
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
            reason = await _reason(link, exc)
            if isinstance(exc, ConnectionError):
                await link.close()
            raise MemberFailed(f"member {self._agent.name} failed: {reason}") from exc
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
                f"member {self._agent.name} could not open a session: {await _reason(link, exc)}"
            ) from exc
        link.sessions[sid] = session.id
        if sid != known:
            session.context[FOREIGN_SESSION] = sid
            session.save()
        return sid

    async def _open_session(self, link: Link, session: Session, known: Any) -> str:
        caps = link.capabilities
        cwd = session.cwd
        if isinstance(known, str):
            resume = caps is not None and caps.session_capabilities is not None and caps.session_capabilities.resume
            if resume:
                link.sessions[known] = session.id
                await link.conn.resume_session(cwd=cwd, session_id=known, mcp_servers=[])
                return known
            if caps is not None and caps.load_session:
                # its replay is not shown (no turn is open): crow replays its own record
                link.sessions[known] = session.id
                await link.conn.load_session(cwd=cwd, session_id=known, mcp_servers=[])
                return known
        answer = await link.conn.new_session(cwd=cwd, mcp_servers=[])
        if isinstance(known, str):
            await self._say(session, f"{self._agent.name} cannot resume its earlier session: it starts afresh.")
        return str(answer.session_id)

    async def _say(self, session: Session, text: str) -> None:
        if self._agent.editor.conn is not None:
            update = update_agent_message(text_block(f"\n\n_{text}_\n\n"))
            await self._agent.editor.conn.session_update(session_id=session.id, update=update)


async def _reason(link: Link, exc: BaseException) -> str:
    return await link.failure() if isinstance(exc, ConnectionError) else _describe(exc)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, RequestError):
        return f"{exc} (JSON-RPC error {exc.code})"
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    return str(exc) or type(exc).__name__


__all__ = ["FOREIGN_SESSION", "ClientCapabilities", "ForeignAgent", "MemberFailed"]
