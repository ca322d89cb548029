"""run_command: in an editor terminal embedded in the tool call, or in a local subprocess.

Either way the command gets a timeout, its output is cut with a visible marker, and nothing is
left behind: the editor terminal is always released, the local process group always killed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import stat
from typing import Any

import anyio
from acp import RequestError, text_block, tool_content, tool_terminal_ref
from acp.schema import EnvVariable

from ..api import Sandbox, ToolContext
from ..events import ToolResult
from ..tools import FunctionTool
from ..util.secrets import child_env, key_names
from .common import MAX_OUTPUT, client_can, guarded, int_arg, off_loop, truncate
from .paths import ToolError, Workspace
from .processes import Guarded
from .processes import start as start_guarded

log = logging.getLogger(__name__)

SHELL = shutil.which("bash", path=os.defpath) or "/bin/sh"
DEFAULT_TIMEOUT = 60
MAX_TIMEOUT = 600
CLIENT_OUTPUT_BYTES = 4 * MAX_OUTPUT
QUIET_ENV = {"PAGER": "cat", "GIT_PAGER": "cat"}
"""Editor terminals are ptys: without this, `git log` would wait in a pager until the timeout."""
LIVE_EVERY = 0.5
LIVE_LINES = 20
LIVE_BYTES = 4000


def outcome(output: str, exit_code: int | None, signal_name: str | None, timed_out: float | None) -> str:
    if timed_out is not None:
        status = f"Timed out after {timed_out:g} s; the command was killed."
    elif signal_name:
        status = f"Killed by signal {signal_name}."
    else:
        status = f"Exit code {exit_code}."
    return f"{output.rstrip()}\n\n{status}" if output.strip() else f"(no output)\n\n{status}"


def ended(exit_code: int | None, signal_name: str | None, timed_out: float | None) -> dict[str, Any]:
    """How the command ended, as the tool call's raw output: what a client shows as its status."""
    return {"exit_code": exit_code, "signal": signal_name, "timed_out": timed_out is not None}


def failed(raw: dict[str, Any]) -> bool:
    """A command that did not exit 0 failed: the call is reported failed, and the model still reads its output."""
    return raw["exit_code"] != 0


async def in_terminal(command: str, cwd: str, timeout: float, context: ToolContext) -> ToolResult:
    client, session_id = context.client, context.session.session_id
    line = [SHELL, "-c", command]
    if context.sandbox.level != "off":
        from .terminal_sandbox import terminal_argv

        roots = [context.session.cwd, *context.session.additional_directories]  # as the editor named them
        line = terminal_argv(context.sandbox, SHELL, command, cwd, roots)
    created = await client.create_terminal(
        session_id=session_id,
        command="env",  # ACP cannot unset a variable: env -u keeps crow's model keys from the command
        args=[*unset_keys(), *line],
        cwd=cwd,
        env=[EnvVariable(name=k, value=v) for k, v in QUIET_ENV.items()],
        output_byte_limit=CLIENT_OUTPUT_BYTES,
    )
    ids = {"session_id": session_id, "terminal_id": created.terminal_id}
    ref = tool_terminal_ref(created.terminal_id)
    try:
        await context.session.update_tool_call(context.call_id, [ref])
        with anyio.move_on_after(timeout) as timer:
            await client.wait_for_terminal_exit(**ids)
        if timer.cancelled_caught:
            await client.kill_terminal(**ids)
        result = await client.terminal_output(**ids)
    finally:
        with anyio.CancelScope(shield=True):
            await _release(client, ids)
    exit_status = result.exit_status
    output = ("[... earlier output truncated ...]\n" if result.truncated else "") + truncate(result.output)
    timed_out = timeout if timer.cancelled_caught else None
    text = outcome(output, exit_status and exit_status.exit_code, exit_status and exit_status.signal, timed_out)
    content: list[Any] = [ref]
    if timed_out is not None:
        content.append(tool_content(text_block(text.rsplit("\n\n", 1)[-1])))
    raw = ended(exit_status and exit_status.exit_code, exit_status and exit_status.signal, timed_out)
    if raw["exit_code"] != 0 and context.sandbox.level != "off":
        text = await _sandbox_note(result.output, raw["exit_code"], text, context)
    return ToolResult(text, is_error=failed(raw), content=content, raw_output=raw)


async def _sandbox_note(output: str, exit_code: int | None, text: str, context: ToolContext) -> str:
    """A failed sandboxed command in the editor's terminal: the sandbox did not start there (from now on
    its commands ask, and the user is told once), or the sandbox refused something (the model is told the
    way out)."""
    from .sandbox import SandboxNotice
    from .terminal_sandbox import did_not_start, mark_unavailable

    if why := did_not_start(output, exit_code):
        mark_unavailable(context.client, why)
        told = SandboxNotice.because(f"the editor's machine cannot sandbox commands ({why})")
        await context.session.notice(told.title, description=told.description)
        return (
            f"{text}\nThe command did not run: the editor's machine cannot sandbox it ({why}). "
            "From now on every command asks the user before it runs outside the sandbox."
        )
    note = _blame(output, context.sandbox)
    return f"{text}\n{note}" if note else text


def unset_keys() -> list[str]:
    """`env -u` for crow's model keys: the editor's environment is its own (inside the sandbox, bwrap's
    --clearenv keeps only the allow list)."""
    return [arg for name in sorted(key_names()) for arg in ("-u", name)]


async def _release(client: Any, ids: dict[str, str]) -> None:
    try:
        await client.release_terminal(**ids)
    except RequestError as exc:
        log.warning("the editor could not release terminal %s: %s", ids["terminal_id"], exc)


class Capture:
    """A process's output, bounded: the first and last MAX_OUTPUT/2 bytes, and how much fell between."""

    def __init__(self, keep: int = MAX_OUTPUT // 2) -> None:
        self.keep, self.head, self.tail, self.dropped = keep, bytearray(), bytearray(), 0
        self.received = 0

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            self.received += len(chunk)
            room = max(self.keep - len(self.head), 0)
            self.head += chunk[:room]
            self.tail += chunk[room:]
            if (extra := len(self.tail) - self.keep) > 0:
                self.dropped += extra
                del self.tail[:extra]

    def text(self) -> str:
        marker = f"\n[... {self.dropped} bytes truncated ...]\n" if self.dropped else ""
        return self.head.decode(errors="replace") + marker + self.tail.decode(errors="replace")

    def last_lines(self, count: int = LIVE_LINES) -> str:
        """The end of the output so far, for the live view."""
        data = (self.head + self.tail)[-LIVE_BYTES:] if not self.dropped else self.tail[-LIVE_BYTES:]
        return "\n".join(data.decode(errors="replace").splitlines()[-count:])


async def show_live(capture: Capture, context: ToolContext) -> None:
    """Every LIVE_EVERY seconds, show the output's tail in the tool call (crow run, editors without terminals)."""
    shown = 0
    while True:
        await asyncio.sleep(LIVE_EVERY)
        if capture.received != shown:
            shown = capture.received
            await context.session.update_tool_call(
                context.call_id, [tool_content(text_block(f"```\n{capture.last_lines()}\n```"))]
            )


async def locally(command: str, cwd: str, timeout: float, context: ToolContext, ws: Workspace) -> ToolResult:
    sandbox = context.sandbox
    if sandbox.level == "off":
        guarded_process = await start_guarded(SHELL, "-c", command, cwd=cwd, env=child_env(explicit=QUIET_ENV))
        return await _finish(guarded_process, timeout, context, sandbox)
    from .pids_cgroup import remove as remove_cgroup
    from .sandbox_fs import planted, planted_note
    from .sandbox_start import start_sandboxed

    guarded_process, cgroup, absent = await start_sandboxed(sandbox, SHELL, command, cwd, ws.confined.real_roots)
    try:
        result = await _finish(guarded_process, timeout, context, sandbox)
    finally:
        if cgroup:
            await anyio.to_thread.run_sync(remove_cgroup, cgroup)
    if made := await anyio.to_thread.run_sync(planted, absent):
        result.text = f"{result.text}\n{planted_note([ws.display(path) for path in made])}"
    return result


async def _finish(guarded_process: Guarded, timeout: float, context: ToolContext, sandbox: Sandbox) -> ToolResult:
    process = guarded_process.process
    assert process.stdout is not None  # a pipe
    capture = Capture()
    reader = asyncio.create_task(capture.drain(process.stdout))
    live = asyncio.create_task(show_live(capture, context))
    try:
        with anyio.move_on_after(timeout) as timer:
            await process.wait()
        guarded_process.kill()  # also background jobs it started, as closing an editor terminal would
        with anyio.move_on_after(2):
            await process.wait()
            await reader
    finally:
        live.cancel()
        reader.cancel()
        with anyio.CancelScope(shield=True):
            await guarded_process.end()
    timed_out = timeout if timer.cancelled_caught else None
    code = process.returncode
    signal_name = signal.Signals(-code).name if code is not None and code < 0 and timed_out is None else None
    text = outcome(capture.text(), code, signal_name, timed_out)
    if code != 0 and (note := _blame(capture.text(), sandbox)):
        text = f"{text}\n{note}"
    shown = [tool_content(text_block(f"```\n{text}\n```"))]
    raw = ended(code if code is not None and code >= 0 else None, signal_name, timed_out)
    return ToolResult(text, is_error=failed(raw), content=shown, raw_output=raw)


def _blame(output: str, sandbox: Sandbox) -> str | None:
    if sandbox.level == "off":
        return None
    from .sandbox import blame

    return blame(output, sandbox)


RUN_DOC = (
    f"Run a shell command ({os.path.basename(SHELL)} -c) in the workspace and return its output and exit code. "
    f"It is killed after `timeout` seconds (default {DEFAULT_TIMEOUT}, at most {MAX_TIMEOUT}); "
    f"long output is cut in the middle. Do not start interactive programs. Commands run in a sandbox: "
    f"only the workspace is writable (not .git, .envrc, editor settings or other protected paths in it), "
    f"$HOME shows only toolchain directories, the environment keeps PATH, HOME, locale and proxies but no "
    f"token or key, unix sockets cannot be opened, and there is no network; `sandbox` asks the user "
    f'for more ("network", or "off" to run outside it) when a command needs it.'
)
RUN_SCHEMA = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "The shell command line."},
        "cwd": {"type": "string", "description": "Directory to run in, relative to the working directory."},
        "timeout": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT, "default": DEFAULT_TIMEOUT},
        "sandbox": {
            "type": "string",
            "enum": ["on", "network", "off"],
            "default": "on",
            "description": "Ask for more than the sandbox: network on, or outside it (the user decides).",
        },
    },
    "required": ["command"],
}


def terminal_tools(ws: Workspace) -> list[FunctionTool]:
    @guarded
    async def run_command(args: dict[str, Any], context: ToolContext) -> ToolResult:
        command = str(args["command"]).strip()
        if not command:
            raise ToolError("command is empty.")
        cwd, st = await off_loop(lambda stop: ws.confined.real_path(ws.resolve(str(args.get("cwd") or "."))))
        if st is None or not stat.S_ISDIR(st.st_mode):  # the real path: a symlinked cwd cannot lead out
            raise ToolError(f"{ws.display(cwd)} is not a directory.")
        timeout = int_arg(args, "timeout", DEFAULT_TIMEOUT, high=MAX_TIMEOUT)
        if client_can(context, "terminal"):
            return await in_terminal(command, cwd, timeout, context)
        return await locally(command, cwd, timeout, context, ws)

    @guarded
    async def check_cwd(args: dict[str, Any], context: ToolContext) -> None:
        ws.resolve(str(args.get("cwd") or "."))  # refuse an outside cwd before asking permission

    return [
        FunctionTool("run_command", RUN_DOC, RUN_SCHEMA, run_command, kind="execute",
                     title=lambda args: f"`{args.get('command', '')}`",
                     timeout=MAX_TIMEOUT + 30,  # the command's own timeout governs; this only backstops it
                     previewer=check_cwd, sandboxed=True),
    ]  # fmt: skip
