"""One live connection to a foreign member: started, initialized, and where its updates go.

A link serves every session of its member. It keeps which of the member's session ids belong to
which crow session; an update for any other id (the parent's, another member's, a guess) is
dropped and logged. When the member dies or breaks the wire, every request in flight fails with
the reason, the editor terminals it left are killed and released, and the next turn starts a new link.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from acp.schema import SessionNotification
from pydantic import ValidationError

from .process import MemberProcess
from .terminals import MemberTerminals
from .wire import UpdateGate

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StdioTarget:
    """An ACP agent crow starts: `command` (a list, as exec takes it), with `env` added to its environment."""

    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    """Where it starts; None: the session's cwd."""
    mcp_servers: bool = False
    """Pass it the MCP servers the editor gave the session (a foreign agent is untrusted, and their env and
    headers may hold secrets, so only when asked)."""


@dataclass(frozen=True)
class RemoteTarget:
    """A `crow serve` (or any ACP agent over WebSocket): ws:// or wss:// URL, bearer token."""

    url: str
    token: str | None = None
    mcp_servers: bool = False
    """As StdioTarget.mcp_servers."""


Target = StdioTarget | RemoteTarget
Deliver = Callable[[str, Any], Awaitable[None]]
"""(crow session id, update): where a member's update goes once it is known to be its own."""


class Link:
    """A connection to the member: `conn` is the SDK's ClientSideConnection."""

    def __init__(self, name: str, deliver: Deliver) -> None:
        self.name = name
        self.conn: Any = None
        self.capabilities: Any = None
        """The member's agent capabilities from its initialize answer."""
        self.process: MemberProcess | None = None
        self.sessions: dict[str, str] = {}
        """The member's session id → the crow session it serves."""
        self._deliver = deliver
        self._transport: Any = None
        self.closed = False
        self.terminals: MemberTerminals | None = None
        """The editor terminals the member created through this link (terminals.py)."""

    async def open(self, target: Target, client: Any, cwd: str) -> None:
        from acp import connect_to_agent

        if isinstance(target, StdioTarget):
            self.process = await MemberProcess.start(self.name, target.command, target.env, target.cwd or cwd)
            inner: Any = self.process.wire
        else:
            from acp.ws.client import create_websocket_stream

            headers = {"Authorization": f"Bearer {target.token}"} if target.token else None
            inner = await create_websocket_stream(target.url, headers=headers)
        self._transport = UpdateGate(inner, self._on_update)
        self.conn = connect_to_agent(client, self._transport)

    def servers_taken(self, servers: list[Any]) -> list[Any]:
        """Of the editor's MCP servers, those the member takes: stdio always, http and sse when it advertised them."""
        from acp.schema import HttpMcpServer, SseMcpServer

        caps = self.capabilities.mcp_capabilities if self.capabilities is not None else None
        taken = [
            server
            for server in servers
            if not isinstance(server, HttpMcpServer | SseMcpServer)
            or bool(caps and (caps.http if isinstance(server, HttpMcpServer) else caps.sse))
        ]
        if len(taken) < len(servers):
            log.info(
                "member %s: %d MCP server(s) left out (a transport it did not advertise)",
                self.name,
                len(servers) - len(taken),
            )
        return taken

    async def failure(self) -> str:
        """Why the link ended, as the failed turn says it."""
        if self.process is not None:
            if self.process.wire.broken:
                return self.process.wire.broken
            if reason := await self.process.exit_reason():
                return reason
        return "the connection closed"

    async def close(self) -> None:
        self.closed = True
        if self.conn is not None:
            await self.conn.close()
        if self.process is not None:
            await self.process.stop()
        if self.terminals is not None:  # after the member is gone: it can create no more meanwhile
            await self.terminals.release_all()

    async def _on_update(self, params: Any) -> None:
        try:
            note = SessionNotification.model_validate(params)
        except ValidationError as exc:
            log.warning("member %s: dropped an invalid session/update: %s", self.name, str(exc)[:300])
            return
        sid = self.sessions.get(note.session_id)
        if sid is None:
            log.warning(
                "member %s: dropped an update for a session that is not its own: %.100r", self.name, note.session_id
            )
            return
        await self._deliver(sid, note.update)
