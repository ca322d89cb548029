"""ForeignAgent: a member of a graph that is another ACP agent, crow being its client.

It is an AcpAgent in everything a graph needs (its own crow session per editor session, stored
hand-offs and replies, bridges, the blackboard, modes), except the turn, which relay.py gives to the
foreign agent. One link (link.py) serves all its sessions; it is started on the first turn, and again
on the turn after it ended. What the member streams for a session reaches the editor only while that
session's turn runs, only the kinds in SHOWN, and within TurnText's bounds.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import AgentMessageChunk, Implementation, TerminalToolCallContent, ToolCallProgress, ToolCallStart

from ...acp.agent import AcpAgent
from ...config import Config
from ...core.session import Session
from ...store import SessionStore
from .client import MemberClient
from .link import Link, Target
from .nomodel import NoModel
from .relay import MemberFailed, RelayTurns, TurnText, describe, reason
from .side import MemberSide
from .terminals import MemberTerminals

log = logging.getLogger(__name__)
SHOWN = {"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"}
"""What of a member's stream the editor sees; its own modes, commands, titles and usage are its business."""


class ForeignAgent(AcpAgent):
    def __init__(self, target: Target, *, name: str, config: Config | None = None, store: SessionStore | None = None):
        super().__init__(config=config, store=store, name=name)
        self.target = target
        self.models.use(NoModel(name))
        self.opener.runs_tools = False  # the member has tools of its own (and the editor's, if target.mcp_servers)
        self.turns = RelayTurns(self, self.config, self.models, self._current_callbacks, self.outbox.emit, self._spawn)
        self._link: Link | None = None
        self._opening = asyncio.Lock()
        self._turns: dict[str, TurnText] = {}

    async def shutdown(self) -> None:
        if self._link is not None:
            await self._link.close()
        await super().shutdown()

    def editor_servers(self, session: Session, link: Link) -> list[Any]:
        """The MCP servers the editor gave `session`, when the target asks to pass them on."""
        if not self.target.mcp_servers:
            return []
        opening = self.open_sessions.pool.open.get(session.id)
        return link.servers_taken(opening.mcp_servers if opening is not None else [])

    async def link(self, session: Session) -> Link:
        """The live link, (re)started when there is none or it ended."""
        async with self._opening:
            link = self._link
            if link is None or link.closed:
                link = self._link = await self._open(session)
            return link

    async def _open(self, session: Session) -> Link:
        link = Link(self.name, self._deliver)
        timeout = self.config.permissions.timeout
        permissions, in_turn = self.turns.permissions, self._turns.__contains__
        side = MemberSide(self.name, self.editor, link.sessions, self.open_sessions.get)
        terminals = MemberTerminals(side, permissions, in_turn)
        link.terminals = terminals  # all it left are ended when the link closes, a session's when its turn ends
        client = MemberClient(side, timeout, self.mode_of, terminals)
        client.touch = self._touch
        try:
            await link.open(self.target, client, session.cwd)
        except Exception as exc:  # isolation boundary: whatever starting or connecting raised is the node's reason
            await link.close()
            raise MemberFailed(f"member {self.name} did not start: {describe(exc)}") from exc
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
            why = await reason(link, exc)
            await link.close()
            raise MemberFailed(f"member {self.name} did not start: {why}") from exc
        link.capabilities = answer.agent_capabilities
        return link

    async def _deliver(self, sid: str, update: Any) -> None:
        turn = self._turns.get(sid)
        if turn is None or update.session_update not in SHOWN or not turn.take(update):
            return
        if isinstance(update, AgentMessageChunk) and update.message_id is None:
            update = update.model_copy(update={"message_id": turn.message_id})
        if isinstance(update, ToolCallStart | ToolCallProgress) and update.content:
            update = self._own_terminals(sid, update)
        if self.editor.conn is not None:
            await self.editor.conn.session_update(session_id=sid, update=update)

    def _own_terminals(self, sid: str, call: ToolCallStart | ToolCallProgress) -> Any:
        """A member's tool call shows only terminals it made for this session: another id (crow's own command's,
        another session's) would have the editor show that terminal's output under the member's call."""
        terminals = self._link.terminals if self._link is not None else None
        content = call.content or []
        kept = [
            item
            for item in content
            if not isinstance(item, TerminalToolCallContent)
            or (terminals is not None and terminals.created(sid, item.terminal_id))
        ]
        if len(kept) == len(content):
            return call
        log.warning("member %s: dropped a tool call's terminal that is not its own", self.name)
        return call.model_copy(update={"content": kept})

    def _touch(self, sid: str) -> None:
        if (turn := self._turns.get(sid)) is not None:
            turn.touch()

    def open_turn(self, sid: str) -> TurnText:
        turn = self._turns[sid] = TurnText(self.config.limits.reply_chars)
        return turn

    def close_turn(self, sid: str) -> None:
        self._turns.pop(sid, None)


__all__ = ["SHOWN", "ForeignAgent", "MemberFailed"]
