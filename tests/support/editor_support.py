"""Shared parts of the editor-tool tests: an ACP client with real fs/terminal methods, and a driver.

EditorClient keeps files in memory (its "unsaved buffers") so a test can prove crow read the
client's text and not the disk, and runs terminals as real subprocesses. It records every call.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import RequestError
from acp.schema import (
    ClientCapabilities,
    CreateTerminalResponse,
    FileSystemCapabilities,
    ReadTextFileResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from crow_acp.testing import Reply, ScriptedModel, ToolCall
from support.helpers import RecordingClient, crow_env, text
from support.hosted import hosted_crow

EDITOR_CAPS = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True)


@dataclass
class Terminal:
    process: asyncio.subprocess.Process
    limit: int | None
    output: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    reader: asyncio.Task | None = None

    async def drain(self) -> None:
        while chunk := await self.process.stdout.read(65536):
            self.output += chunk
            if self.limit is not None and len(self.output) > self.limit:
                del self.output[: len(self.output) - self.limit]  # as ACP says: drop from the beginning
                self.truncated = True

    def exit_status(self) -> TerminalExitStatus | None:
        code = self.process.returncode
        if code is None:
            return None
        return TerminalExitStatus(
            exit_code=code if code >= 0 else None, signal=None if code >= 0 else signal.Signals(-code).name
        )


class EditorClient(RecordingClient):
    def __init__(
        self, files: dict[str, str] | None = None, terminal_env: dict[str, str] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.files = dict(files or {})
        self.terminal_env = dict(terminal_env or {})
        """Over this process's environment in every terminal: the editor's machine, where it differs."""
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.terminals: dict[str, Terminal] = {}
        self._ids = itertools.count(1)

    def called(self, method: str) -> list[dict[str, Any]]:
        return [args for name, args in self.calls if name == method]

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **_: Any
    ) -> Any:
        self.calls.append(("read_text_file", {"path": path, "line": line, "limit": limit}))
        if path not in self.files:
            raise RequestError.resource_not_found(path)
        lines = self.files[path].splitlines(keepends=True)
        start = (line or 1) - 1
        return ReadTextFileResponse(content="".join(lines[start : start + limit if limit else None]))

    async def write_text_file(self, session_id: str, path: str, content: str, **_: Any) -> Any:
        self.calls.append(("write_text_file", {"path": path, "content": content}))
        self.files[path] = content
        return WriteTextFileResponse()

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: Any = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **_: Any,
    ) -> Any:
        self.calls.append(
            ("create_terminal", {"command": command, "args": args, "cwd": cwd, "limit": output_byte_limit})
        )
        extra = {**self.terminal_env, **{item.name: item.value for item in env or []}}
        process = await asyncio.create_subprocess_exec(
            command, *(args or []), cwd=cwd, env={**os.environ, **extra}, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        terminal = Terminal(process, output_byte_limit)
        terminal.reader = asyncio.create_task(terminal.drain())
        terminal_id = f"term-{next(self._ids)}"
        self.terminals[terminal_id] = terminal
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(self, session_id: str, terminal_id: str, **_: Any) -> Any:
        self.calls.append(("terminal_output", {"terminal_id": terminal_id}))
        terminal = self.terminals[terminal_id]
        if terminal.process.returncode is not None:
            await terminal.reader
        return TerminalOutputResponse(
            output=terminal.output.decode(errors="replace"),
            truncated=terminal.truncated,
            exit_status=terminal.exit_status(),
        )

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **_: Any) -> Any:
        self.calls.append(("wait_for_terminal_exit", {"terminal_id": terminal_id}))
        terminal = self.terminals[terminal_id]
        await terminal.process.wait()
        await terminal.reader
        status = terminal.exit_status()
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill_terminal(self, session_id: str, terminal_id: str, **_: Any) -> None:
        self.calls.append(("kill_terminal", {"terminal_id": terminal_id}))
        self._kill(self.terminals[terminal_id])
        await self.terminals[terminal_id].process.wait()

    async def release_terminal(self, session_id: str, terminal_id: str, **_: Any) -> None:
        self.calls.append(("release_terminal", {"terminal_id": terminal_id}))
        terminal = self.terminals.pop(terminal_id)
        self._kill(terminal)
        await terminal.process.wait()  # reaped here: not by the garbage collector after the test's loop closed

    @staticmethod
    def _kill(terminal: Terminal) -> None:
        if terminal.process.returncode is None:
            os.killpg(terminal.process.pid, signal.SIGKILL)


async def drive(client: Any, tmp_path: Path, cwd: Path, calls: list[ToolCall], *, capabilities: Any = None,
                additional: list[str] | None = None) -> tuple[Any, ScriptedModel]:  # fmt: skip
    """One prompt in `crow acp` where the model makes `calls` one after another, then says done."""
    script = [Reply(tool_calls=[call]) for call in calls]
    with ScriptedModel(script, default=Reply(text="done")) as model:
        env = crow_env(tmp_path / "home", model.base_url)
        async with hosted_crow(client, env, cwd=str(cwd), capabilities=capabilities) as (conn, _):
            session = await conn.new_session(cwd=str(cwd), mcp_servers=[], additional_directories=additional)
            response = await conn.prompt(session_id=session.session_id, prompt=[text("go")])
            assert response.stop_reason == "end_turn"
    return client, model


def results(model: ScriptedModel) -> dict[str, str]:
    """What the model got back for each tool call id (from the last request it received)."""
    messages = model.requests[-1]["messages"]
    return {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}


def updates_for(client: Any, call_id: str) -> list[Any]:
    return [u for u in client.updates if getattr(u, "tool_call_id", None) == call_id]


def final(client: Any, call_id: str) -> Any:
    done = [
        u
        for u in updates_for(client, call_id)
        if u.session_update == "tool_call_update" and u.status in ("completed", "failed")
    ]
    assert len(done) == 1, updates_for(client, call_id)
    return done[0]


def started(client: Any, call_id: str) -> Any:
    return next(u for u in updates_for(client, call_id) if u.session_update == "tool_call")


def asked(client: Any) -> list[str]:
    """Titles of the tool calls the user was asked to allow."""
    return [tool_call.title for tool_call, _ in client.permission_requests]
