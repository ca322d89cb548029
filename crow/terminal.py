"""The terminal client behind `crow run`: a real ACP client that prints the stream as it arrives."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block
from acp.schema import AllowedOutcome, ClientCapabilities, Implementation, RequestPermissionResponse

RESULT_PREVIEW = 400
DIM, RESET = ("\033[2m", "\033[0m") if sys.stderr.isatty() else ("", "")


class TerminalClient:
    def __init__(self, *, approve: bool) -> None:
        self.approve = approve
        self.titles: dict[str, str] = {}
        self.at_line_start = True
        self.quiet = False
        """Set while session/load replays history the user has already seen."""

    def _out(self, text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()
        self.at_line_start = text.endswith("\n")

    def _line(self, text: str) -> None:
        self._out(("" if self.at_line_start else "\n") + text + "\n")

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        kind = update.session_update
        if self.quiet:
            return
        if kind == "agent_message_chunk" and update.content.type == "text":
            self._out(update.content.text)
        elif kind == "agent_thought_chunk" and update.content.type == "text":
            sys.stderr.write(DIM + update.content.text + RESET)
        elif kind == "tool_call":
            self.titles[update.tool_call_id] = update.title
            self._line(f"⚙ {update.title} [{update.status or 'pending'}]")
            self._print_content(update.content)
        elif kind == "tool_call_update" and update.status in ("completed", "failed"):
            self._line(f"⚙ {self.titles.get(update.tool_call_id, update.tool_call_id)} [{update.status}]")
            self._print_content(update.content)

    def _print_content(self, content: Any) -> None:
        for item in content or []:
            text = getattr(getattr(item, "content", None), "text", None)
            if item.type == "diff":
                text = f"diff {item.path}"
            if text:
                preview = text if len(text) <= RESULT_PREVIEW else text[:RESULT_PREVIEW] + " …"
                self._line("  " + preview.replace("\n", "\n  "))

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **_: Any) -> Any:
        title = tool_call.title or tool_call.tool_call_id
        if self.approve:
            choice = "allow_once"
        elif sys.stdin.isatty():
            answer = await ask(f"Allow {title}? [y]es / [a]lways / [N]o: ")
            choice = {"y": "allow_once", "a": "allow_always"}.get(answer.strip().lower()[:1], "reject_once")
        else:
            self._line(f"⚙ {title}: permission needed; rerun with --yes to allow tools")
            choice = "reject_once"
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=choice))


async def ask(question: str) -> str:
    """A line from the terminal without a thread, so Ctrl-C is not stuck behind a blocked input()."""
    sys.stderr.write(question)
    sys.stderr.flush()
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[str] = loop.create_future()
    loop.add_reader(sys.stdin.fileno(), lambda: answer.done() or answer.set_result(sys.stdin.readline()))
    try:
        return await answer
    finally:
        loop.remove_reader(sys.stdin.fileno())


async def run_prompt(prompt: str, agent_args: list[str], *, approve: bool, cwd: str, session: str | None) -> int:
    client = TerminalClient(approve=approve)
    command = [sys.executable, "-m", "crow", "acp", *agent_args]
    async with spawn_agent_process(client, *command, env=dict(os.environ), transport_kwargs={"stderr": None}) as (conn, _):
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="crow-run", version="0"),
        )
        if session:
            client.quiet = True
            await conn.load_session(cwd=cwd, session_id=session, mcp_servers=[])
            client.quiet = False
            sid = session
        else:
            sid = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id
        try:
            response = await conn.prompt(session_id=sid, prompt=[text_block(prompt)])
        except RequestError as exc:
            sys.stderr.write(f"\ncrow: {exc}\n")
            return 1
        except asyncio.CancelledError:
            await conn.cancel(session_id=sid)
            raise
        if not client.at_line_start:
            client._out("\n")
        sys.stderr.write(f"{DIM}[{response.stop_reason} · session {sid}]{RESET}\n")
        return 0 if response.stop_reason in ("end_turn", "max_tokens") else 2

