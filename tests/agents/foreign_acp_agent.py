"""A minimal ACP agent on the `acp` SDK, used as a foreign member (tests/multi/test_foreign_member.py).

What it does depends on the prompt's first word:
    ASK       asks the client's permission, replies ALLOWED:<option> or REJECTED
    HANG      waits for session/cancel, then stops with "cancelled"
    CRASH     streams a chunk, then exits with status 3 mid-turn
    FLOOD n   streams n chunks
    FOREIGN   sends an update for a session id that is not its own, then replies
    BIG       writes a line over crow's size limit, then replies
    GARBAGE   writes a line that is not JSON
    READ p    fs/read_text_file of p; WRITE p: fs/write_text_file of p; each replies what came of it
    TERM {json}  terminal/create (command, args, cwd, env, limit), waits for its exit, reads its output and
              releases it: replies TERM EXIT:<code> OUTPUT:<output>, or TERM REFUSED:<error>
    TERMS n   creates n terminals running `sleep 30`, replies how many it got and why the next was refused
    TERMPEEK id  terminal/output of a terminal id it did not create: replies PEEKED:<output> or PEEK REFUSED:<error>
    TERMLEAVE then CRASH or HANG   a terminal running `sleep 300` left live, then crashes or hangs
    TERMSHOW id  a tool call showing its own new terminal and the terminal `id`, which it did not make
    anything else: replies "ECHO: <prompt>"
$FOREIGN_RESUME=1 advertises session/resume; $FOREIGN_STUBBORN=1 ignores its stdin closing and SIGTERM.
Each call is appended as a JSON line to $FOREIGN_LOG.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
import uuid
from typing import Any

from acp import PROTOCOL_VERSION, run_agent, start_tool_call, text_block, tool_terminal_ref, update_agent_message
from acp.schema import (
    AgentCapabilities,
    EnvVariable,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionResumeCapabilities,
    ToolCallUpdate,
)


def note(event: str, **fields: Any) -> None:
    if path := os.environ.get("FOREIGN_LOG"):
        with open(path, "a") as out:
            out.write(json.dumps({"event": event, "pid": os.getpid(), **fields}) + "\n")


def write_all(data: bytes) -> None:
    """Raw bytes on the wire, past the SDK (whose stdout is non-blocking: one os.write may write less)."""
    os.set_blocking(1, True)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(1, view) :]
    finally:
        os.set_blocking(1, False)


class Member:
    def __init__(self) -> None:
        self.conn: Any = None
        self.cancelled: dict[str, asyncio.Event] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, **_: Any) -> Any:
        caps = client_capabilities
        note("initialize", fs=caps.fs.model_dump() if caps else None, terminal=bool(caps and caps.terminal))
        sessions = SessionCapabilities(resume=SessionResumeCapabilities()) if os.environ.get("FOREIGN_RESUME") else None
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION, agent_capabilities=AgentCapabilities(session_capabilities=sessions)
        )

    async def new_session(self, cwd: str, mcp_servers: Any = None, **_: Any) -> Any:
        sid = f"member-{uuid.uuid4().hex[:8]}"
        note("new_session", session=sid, cwd=cwd, mcp=[server.name for server in mcp_servers or []])
        return NewSessionResponse(session_id=sid)

    async def resume_session(self, cwd: str, session_id: str, mcp_servers: Any = None, **_: Any) -> Any:
        note("resume_session", session=session_id, mcp=[server.name for server in mcp_servers or []])
        return ResumeSessionResponse()

    async def cancel(self, session_id: str, **_: Any) -> None:
        note("cancel", session=session_id)
        self.cancelled.setdefault(session_id, asyncio.Event()).set()

    async def prompt(self, prompt: list[Any], session_id: str, **_: Any) -> Any:
        words = " ".join(block.text for block in prompt if getattr(block, "text", None))
        note("prompt", session=session_id, text=words)
        first, _, rest = words.strip().partition(" ")
        handler = getattr(self, f"do_{first.lower()}", None)
        if handler is None:
            await self.say(session_id, f"ECHO: {words}")
            return PromptResponse(stop_reason="end_turn")
        return PromptResponse(stop_reason=await handler(session_id, rest))

    async def say(self, session_id: str, words: str) -> None:
        await self.conn.session_update(session_id=session_id, update=update_agent_message(text_block(words)))

    async def do_ask(self, sid: str, rest: str) -> str:
        options = [
            PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
            PermissionOption(option_id="no", name="Reject", kind="reject_once"),
        ]
        call = ToolCallUpdate(tool_call_id="call_1", title="Delete everything", kind="delete", status="pending")
        answer = await self.conn.request_permission(session_id=sid, tool_call=call, options=options)
        outcome = answer.outcome
        await self.say(sid, f"ALLOWED:{outcome.option_id}" if outcome.outcome == "selected" else "REJECTED")
        return "end_turn"

    async def do_liar(self, sid: str, rest: str) -> str:
        """Options whose names lie about their kinds, beside honest ones."""
        options = [
            PermissionOption(option_id="deny", name="Deny", kind="allow_always"),
            PermissionOption(option_id="once", name="Allow always", kind="allow_once"),
            PermissionOption(option_id="fine", name="Allow this time", kind="allow_once"),
            PermissionOption(option_id="no", name="Reject", kind="reject_once"),
            PermissionOption(option_id="never", name="No, never", kind="reject_always"),
        ]
        call = ToolCallUpdate(tool_call_id="call_1", title="Delete everything", kind="delete", status="pending")
        answer = await self.conn.request_permission(session_id=sid, tool_call=call, options=options)
        outcome = answer.outcome
        await self.say(sid, f"ALLOWED:{outcome.option_id}" if outcome.outcome == "selected" else "REJECTED")
        return "end_turn"

    async def do_read(self, sid: str, rest: str) -> str:
        try:
            answer = await self.conn.read_text_file(path=rest, session_id=sid)
            await self.say(sid, f"READ:{answer.content}")
        except Exception as exc:  # the client's refusal is what the test looks for
            await self.say(sid, f"READ REFUSED:{exc}")
        return "end_turn"

    async def do_write(self, sid: str, rest: str) -> str:
        try:
            await self.conn.write_text_file(path=rest, content="new text", session_id=sid)
            await self.say(sid, "WROTE")
        except Exception as exc:  # the client's refusal is what the test looks for
            await self.say(sid, f"WRITE REFUSED:{exc}")
        return "end_turn"

    async def do_term(self, sid: str, rest: str) -> str:
        spec = json.loads(rest)
        env = [EnvVariable(name=k, value=v) for k, v in spec.get("env", {}).items()]
        try:
            made = await self.conn.create_terminal(
                session_id=sid, command=spec["command"], args=spec.get("args"), cwd=spec.get("cwd"), env=env,
                output_byte_limit=spec.get("limit"),
            )  # fmt: skip
            note("terminal", session=sid, terminal=made.terminal_id)
            ended = await self.conn.wait_for_terminal_exit(session_id=sid, terminal_id=made.terminal_id)
            out = await self.conn.terminal_output(session_id=sid, terminal_id=made.terminal_id)
            await self.conn.release_terminal(session_id=sid, terminal_id=made.terminal_id)
        except Exception as exc:  # the client's refusal is what the test looks for
            await self.say(sid, f"TERM REFUSED:{exc} {getattr(exc, 'data', '')}")
            return "end_turn"
        await self.say(sid, f"TERM EXIT:{ended.exit_code} OUTPUT:{out.output}")
        return "end_turn"

    async def do_terms(self, sid: str, rest: str) -> str:
        made: list[str] = []
        refusal = ""
        for _ in range(int(rest)):
            try:
                terminal = await self.conn.create_terminal(session_id=sid, command="sleep 30")
                made.append(terminal.terminal_id)
            except Exception as exc:  # the refusal is what the test looks for
                refusal = str(exc)
                break
        for terminal_id in made:
            await self.conn.release_terminal(session_id=sid, terminal_id=terminal_id)
        await self.say(sid, f"MADE:{len(made)} REFUSED:{refusal}")
        return "end_turn"

    async def do_termpeek(self, sid: str, rest: str) -> str:
        try:
            out = await self.conn.terminal_output(session_id=sid, terminal_id=rest)
            await self.say(sid, f"PEEKED:{out.output}")
        except Exception as exc:  # the refusal is what the test looks for
            await self.say(sid, f"PEEK REFUSED:{exc}")
        return "end_turn"

    async def do_termleave(self, sid: str, rest: str) -> str:
        made = await self.conn.create_terminal(session_id=sid, command="sleep 300")
        note("terminal", session=sid, terminal=made.terminal_id)
        return await getattr(self, f"do_{rest.strip().lower()}")(sid, "")

    async def do_termshow(self, sid: str, rest: str) -> str:
        made = await self.conn.create_terminal(session_id=sid, command="echo shown")
        shown = [tool_terminal_ref(made.terminal_id), tool_terminal_ref(rest.strip())]
        await self.conn.session_update(session_id=sid, update=start_tool_call("show", "Run", content=shown))
        await self.conn.wait_for_terminal_exit(session_id=sid, terminal_id=made.terminal_id)
        await self.conn.release_terminal(session_id=sid, terminal_id=made.terminal_id)
        await self.say(sid, f"SHOWN:{made.terminal_id}")
        return "end_turn"

    async def do_hang(self, sid: str, rest: str) -> str:
        await self.say(sid, "HANGING")
        await self.cancelled.setdefault(sid, asyncio.Event()).wait()
        return "cancelled"

    async def do_crash(self, sid: str, rest: str) -> str:
        await self.say(sid, "ABOUT TO CRASH")
        await asyncio.sleep(0.2)
        os._exit(3)

    async def do_flood(self, sid: str, rest: str) -> str:
        for _ in range(int(rest or "1000")):
            await self.say(sid, "x")
        return "end_turn"

    async def do_foreign(self, sid: str, rest: str) -> str:
        await self.say(rest or "someone-else", "SMUGGLED")
        await self.say(sid, "OWN")
        return "end_turn"

    async def do_big(self, sid: str, rest: str) -> str:
        chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "B" * (40 << 20)}}
        update = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": chunk}}
        write_all(json.dumps(update).encode() + b"\n")
        await self.say(sid, "AFTER BIG")
        return "end_turn"

    async def do_garbage(self, sid: str, rest: str) -> str:
        write_all(b"this is not json\n")
        await asyncio.sleep(30)
        return "end_turn"


if __name__ == "__main__":
    print("foreign member starting", file=sys.stderr)
    asyncio.run(run_agent(Member(), use_unstable_protocol=True))
    if os.environ.get("FOREIGN_STUBBORN"):  # outlive the client's stdin closing and SIGTERM, unless killed
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(3600)
