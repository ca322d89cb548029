"""The ACP client's end of the hosted agent (crow_acp/server/hosted.py), shared by `crow run` and `crow chat`:
initialize, open or load a session, prompt, cancel, and the session's options and lists."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, cast

from acp import PROTOCOL_VERSION, RequestError, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation, SessionModeState

from crow.exits import FAILED, USAGE, Exit
from crow.logfile import log_hint
from crow.run.client import TerminalClient
from crow_acp.server.hosted import AgentGone, HostedAgent, hosted

log = logging.getLogger("crow.run")
NOT_FOUND = -32002
STEER_META = {"steering": {"idleBehavior": "promptRequired"}}
"""A steering message no turn takes comes back to crow chat, which sends it as the next prompt."""
LINE_LIMIT = 50 * 1024 * 1024  # one JSON-RPC line to the client may carry a whole file's diff
CAPABILITIES = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=False, write_text_file=False), terminal=False
)
"""What crow's terminal client serves: neither `fs` nor `terminal` (TerminalClient has no such methods). The
terminal user's disk is crow's own, so crow reads, writes and runs commands locally, each write and command
behind this client's permission prompt, exactly as the tools work without an editor."""


@dataclass
class Turn:
    """How one prompt ended: its stop reason, or the agent's error message."""

    stop_reason: str | None = None
    error: str | None = None


class AgentLink:
    """One initialized connection to the hosted agent. AgentGone (the agent stopped serving) ends as one line."""

    def __init__(self, client: TerminalClient, conn: Any, served: HostedAgent) -> None:
        self.client = client
        self.conn = conn
        self.served = served
        self.modes: dict[str, SessionModeState | None] = {}
        """Each opened session's modes, as its new/load answer gave them (--mode checks against them)."""

    async def new_session(self, cwd: str) -> str:
        try:
            response = await self.served.call(self.conn.new_session(cwd=cwd, mcp_servers=[]))
        except RequestError as exc:  # the store failed after it answered crow's check, say
            raise Exit(FAILED, f"cannot start a session: {message_of(exc)}; see the log, {log_hint()}") from None
        self.client.session_opened(response.config_options)
        self.modes[str(response.session_id)] = response.modes
        return str(response.session_id)

    async def load_session(self, cwd: str, session_id: str, transcript: list[Any] | None = None) -> None:
        """Load a stored session; its replay goes to `transcript` when given, else nowhere (already seen)."""
        self.client.replaying, self.client.transcript = True, transcript
        try:
            response = await self.served.call(self.conn.load_session(cwd=cwd, session_id=session_id, mcp_servers=[]))
        except RequestError as exc:
            if exc.code == NOT_FOUND:
                raise Exit(USAGE, f"no stored session {session_id!r} (`crow sessions` lists them)") from None
            raise Exit(FAILED, f"cannot continue session {session_id}: {message_of(exc)}") from None
        finally:
            self.client.replaying, self.client.transcript = False, None
        self.client.session_opened(response.config_options)
        self.modes[session_id] = response.modes

    async def close_session(self, session_id: str) -> None:
        """Free a session this conversation left (its MCP servers, its lease); it stays stored."""
        try:
            await self.served.call(self.conn.close_session(session_id=session_id))
        except RequestError as exc:  # it stays open until crow ends, as it would have without this
            log.warning("closing session %s failed: %s", session_id, message_of(exc))

    async def prompt(self, session_id: str, text: str) -> Turn:
        """One turn. Cancelled from outside (Ctrl-C in crow run), it stops the turn so the session records it."""
        try:
            response = await self.served.call(self.conn.prompt(session_id=session_id, prompt=[text_block(text)]))
        except RequestError as exc:
            return Turn(error=message_of(exc))
        except asyncio.CancelledError:
            await self.cancel(session_id)
            raise
        return Turn(stop_reason=response.stop_reason)

    async def steer(self, session_id: str, text: str) -> str:
        """`_session/steering` into the running turn: its outcome; "promptRequired" when no turn took it."""
        params = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}], "_meta": STEER_META}
        try:
            answer = await self.served.call(self.conn.ext_method("session/steering", params))
        except RequestError as exc:  # an agent without steering (--agent): the message waits for the turn's end
            log.info("steering refused: %s", message_of(exc))
            return "promptRequired"
        return str(answer.get("outcome")) if isinstance(answer, dict) else "promptRequired"

    async def cancel(self, session_id: str) -> None:
        self.client.cancel_questions()  # ACP: the client answers its open permission requests "cancelled"
        try:
            await asyncio.wait_for(asyncio.shield(self.conn.cancel(session_id=session_id)), 1)
        except (TimeoutError, ConnectionError, RequestError):
            pass  # the agent is stopped right after; it answers open calls itself


@asynccontextmanager
async def linked(agent: Any, client: TerminalClient, name: str) -> AsyncIterator[AgentLink]:
    """Host `agent` in this process and initialize a connection to it as the client `name`."""
    async with hosted(agent, client_max_message=LINE_LIMIT) as served:
        # TerminalClient implements the Client methods crow uses; the SDK's Protocol lists them all.
        conn = ClientSideConnection(cast(Any, client), served.wire, use_unstable_protocol=True)
        try:
            await served.call(
                conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=CAPABILITIES,
                    client_info=Implementation(name=name, version="0"),
                )
            )
            yield AgentLink(client, conn, served)
        except AgentGone as gone:
            raise Exit(FAILED, f"{gone.message}; see the log, {log_hint()}") from None
        finally:
            await conn.close()


def message_of(exc: RequestError) -> str:
    data = exc.data
    if isinstance(data, dict) and isinstance(data.get("details"), str):
        return data["details"]
    return str(exc)
