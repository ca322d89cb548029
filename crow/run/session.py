"""One prompt through the hosted agent (crow_acp/server/hosted.py): initialize, open or load the session,
prompt, and turn the outcome into an exit status."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

from acp import PROTOCOL_VERSION, RequestError, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation, SessionModeState

from crow.exits import FAILED, OK, STOPPED, USAGE, Exit
from crow.logfile import log_hint
from crow.run.client import TerminalClient
from crow.run.modes import run_mode
from crow.run.options import RunOptions
from crow.run.view import View
from crow_acp.policy.sandboxing import unavailable_notice
from crow_acp.server.hosted import AgentGone, HostedAgent, hosted

NOT_FOUND = -32002
LINE_LIMIT = 50 * 1024 * 1024  # one JSON-RPC line to the client may carry a whole file's diff
CAPABILITIES = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=False, write_text_file=False), terminal=False
)
"""What `crow run` serves: neither `fs` nor `terminal` (TerminalClient has no such methods). The terminal user's
disk is crow's own, so crow reads, writes and runs commands locally, each write and command behind this client's
permission prompt, exactly as the tools work without an editor."""


async def drive(options: RunOptions, view: View, agent: Any) -> int:
    client = TerminalClient(view)
    for warning in options.warnings + (
        _skill_warnings(options.config.home, options.cwd) if options.agent is None else []
    ):
        view.warning(warning)
    if notice := await asyncio.to_thread(unavailable_notice, options.config.sandbox):
        view.warning(notice.line())  # once, with the fix; the commands then ask
    async with hosted(agent, client_max_message=LINE_LIMIT) as served:
        # TerminalClient implements the Client methods crow uses; the SDK's Protocol lists them all.
        conn = ClientSideConnection(cast(Any, client), served.wire, use_unstable_protocol=True)
        try:
            return await _prompt(options, view, client, conn, served)
        except AgentGone as gone:
            raise Exit(FAILED, f"{gone.message}; see the log, {log_hint()}") from None
        finally:
            await conn.close()


def _skill_warnings(home: Path, cwd: str) -> list[str]:
    """Broken skills, once, before the run: the agent skips them (its log says so, in crow.log since logging
    is set up: scanned before that, Python would print the log line on stderr as well)."""
    from crow_skills.discover import discover, search_dirs

    return [f"skill skipped: {warning}" for warning in discover(search_dirs(Path(cwd), home=home)).warnings]


async def _prompt(options: RunOptions, view: View, client: TerminalClient, conn: Any, served: HostedAgent) -> int:
    await served.call(
        conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=CAPABILITIES,
            client_info=Implementation(name="crow-run", version="0"),
        )
    )
    sid, modes = await _open_session(options, client, conn, served)
    async with run_mode(served, conn, sid, modes, options.mode):
        try:
            response = await served.call(conn.prompt(session_id=sid, prompt=[text_block(options.prompt)]))
        except RequestError as exc:
            view.error(_message(exc), sid)
            return FAILED
        except asyncio.CancelledError:  # Ctrl-C: stop the turn so the session records it, then go
            await _cancel(conn, sid)
            raise
    view.stop(response.stop_reason, sid)
    return OK if response.stop_reason in ("end_turn", "max_tokens") else STOPPED


async def _open_session(
    options: RunOptions, client: TerminalClient, conn: Any, served: HostedAgent
) -> tuple[str, SessionModeState | None]:
    if not options.session:
        try:
            response = await served.call(conn.new_session(cwd=options.cwd, mcp_servers=[]))
        except RequestError as exc:  # the store failed after it answered crow's check, say
            raise Exit(FAILED, f"cannot start a session: {_message(exc)}; see the log, {log_hint()}") from None
        return response.session_id, response.modes
    client.replaying = True  # the history was seen already; only the new turn is shown
    try:
        loaded = await served.call(conn.load_session(cwd=options.cwd, session_id=options.session, mcp_servers=[]))
    except RequestError as exc:
        if exc.code == NOT_FOUND:
            raise Exit(USAGE, f"no stored session {options.session!r} (`crow sessions` lists them)") from None
        raise Exit(FAILED, f"cannot continue session {options.session}: {_message(exc)}") from None
    finally:
        client.replaying = False
    return options.session, loaded.modes if loaded is not None else None


async def _cancel(conn: Any, sid: str) -> None:
    try:
        await asyncio.wait_for(asyncio.shield(conn.cancel(session_id=sid)), 1)
    except (TimeoutError, ConnectionError, RequestError):
        pass  # the agent is stopped right after; it answers open calls itself


def _message(exc: RequestError) -> str:
    data = exc.data
    if isinstance(data, dict) and isinstance(data.get("details"), str):
        return data["details"]
    return str(exc)
