"""Shared test parts: a recording ACP client and a way to run `crow acp` under it."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from acp import PROTOCOL_VERSION, connect_to_agent, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    HttpMcpServer,
    Implementation,
    McpServerStdio,
    RequestPermissionResponse,
    SseMcpServer,
)
from acp.transports import default_environment

from support import spawn


class RecordingClient:
    """An ACP client that records every update and answers permission requests from a script."""

    def __init__(self, permission: str = "allow_once") -> None:
        self.updates: list[Any] = []
        self.permission_requests: list[Any] = []
        self.permission = permission  # an option id, or "cancelled"
        self.permission_delay = 0.0
        self._changed = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)
        self._notify()

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **_: Any) -> Any:
        self.permission_requests.append((tool_call, options))
        self._notify()
        if self.permission_delay:
            await asyncio.sleep(self.permission_delay)
        if self.permission == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=self.permission))

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_for(self, predicate: Callable[[RecordingClient], Any], timeout: float = 15.0) -> None:
        """Wait until predicate(self) holds; it is checked after every update and permission request."""
        with anyio.fail_after(timeout):
            while not predicate(self):
                await self._changed.wait()

    def tool_updates(self, call_id: str) -> list[Any]:
        return [u for u in self.updates if getattr(u, "tool_call_id", None) == call_id]

    def kinds(self) -> list[str]:
        return [u.session_update for u in self.updates]

    def text(self) -> str:
        return "".join(u.content.text for u in self.updates if u.session_update == "agent_message_chunk")

    def of(self, kind: str) -> list[Any]:
        return [u for u in self.updates if u.session_update == kind]


def crow_env(home: Path, base_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CROW_"))}
    return {**env, "OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": base_url, "CROW_HOME": str(home), **extra}


@asynccontextmanager
async def run_crow(
    client: Any,
    env: dict[str, str],
    *args: str,
    cwd: str | None = None,
    capabilities: ClientCapabilities | None = None,
    exec_: bool = False,
    wrapper: tuple[str, ...] = (),
) -> AsyncIterator[tuple[Any, Any]]:
    """`python -m crow acp ARGS` (forked, see spawn.py; exec_=True or a wrapper command execs it), initialized;
    yields (connection, process)."""
    proc = await spawn.start(["acp", *args], default_environment() | env, cwd, exec_=exec_, wrapper=wrapper)
    conn = connect_to_agent(client, proc.stdin, proc.stdout)
    try:
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=capabilities or ClientCapabilities(),
            client_info=Implementation(name="crow-tests", version="0"),
        )
        yield conn, proc
    finally:
        await conn.close()
        await spawn.close(proc)


def text(value: str) -> Any:
    return text_block(value)


# MCP servers for the tests
TESTS = Path(__file__).resolve().parents[1]  # tests/: this file is tests/support/helpers.py
ECHO_SERVER = TESTS / "mcp_servers" / "echo_server.py"


def echo_stdio(name: str = "echo", *extra_args: str) -> McpServerStdio:
    """The echo server, forked by the fork server (spawn.python(); CROW_TEST_EXEC=1 execs it)."""
    return McpServerStdio(name=name, command=spawn.python(), args=[str(ECHO_SERVER), *extra_args], env=[])


def time_server() -> list[str]:
    """The published MCP time server (mcp-server-time), forked like echo_stdio()."""
    return [spawn.python(), "-m", "mcp_server_time", "--local-timezone", "UTC"]


def echo_entry(name: str = "echo") -> dict[str, Any]:
    """echo_stdio() as the raw JSON of session/new's mcpServers."""
    return {"name": name, "command": spawn.python(), "args": [str(ECHO_SERVER)], "env": []}


def echo_toml(name: str = "echo") -> str:
    """echo_stdio() as a config.toml table."""
    return f"[mcp_servers.{name}]\ncommand = {json.dumps(spawn.python())}\nargs = [{json.dumps(str(ECHO_SERVER))}]\n"


def crow_command(*args: str) -> list[str]:
    """`python -m crow ARGS` for a test that starts crow itself (a CLI command, a terminal): forked when it can be."""
    return [spawn.python(), "-m", "crow", *args]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@asynccontextmanager
async def echo_remote(kind: str, name: str | None = None) -> AsyncIterator[Any]:
    """The echo server over streamable HTTP ("http") or SSE ("sse"); yields the ACP server entry."""
    for _attempt in range(3):  # another process may take the free port before the server binds it
        port = free_port()
        proc = await asyncio.create_subprocess_exec(
            spawn.python(),
            str(ECHO_SERVER),
            f"--{kind}",
            str(port),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        if await _serving(proc, port):
            break
        await proc.wait()
    else:
        raise RuntimeError(f"echo server ({kind}) exited with {proc.returncode} three times")
    try:
        if kind == "http":
            yield HttpMcpServer(type="http", name=name or "web", url=f"http://127.0.0.1:{port}/mcp", headers=[])
        else:
            yield SseMcpServer(type="sse", name=name or "events", url=f"http://127.0.0.1:{port}/sse", headers=[])
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


async def _serving(proc: asyncio.subprocess.Process, port: int) -> bool:
    """True once the port opens (uvicorn is serving); False if the server exited first."""
    with anyio.fail_after(20):
        while proc.returncode is None:
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.05)
                continue
            await stream.aclose()
            return True
    return False


def write_config(home: Path, text: str) -> None:
    (home / "config.toml").write_text(text)


def tool_names(request: dict) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools", [])]


def assert_strict_pairing(messages: list[dict[str, Any]], *, in_flight_ok: bool = False) -> None:
    """The rules strict OpenAI-compatible servers enforce on tool calls (vLLM, Mistral, OpenAI itself)."""
    expecting: set[str] | None = None
    for index, message in enumerate(messages):
        role = message["role"]
        assert role != "system" or index == 0, f"{index}: a system message after the start"
        if role == "tool":
            assert expecting is not None, f"{index}: a tool result with no assistant tool call right before it"
            assert message["tool_call_id"] in expecting, (
                f"{index}: result for {message['tool_call_id']}, not an open call"
            )
            expecting.discard(message["tool_call_id"])
            continue
        assert not expecting, f"{index}: {role} message while calls {expecting} are unanswered"
        expecting = None
        if role == "assistant":
            calls = message.get("tool_calls") or []
            assert message.get("content") or calls, f"{index}: an assistant message with neither content nor calls"
            ids = [call["id"] for call in calls]
            assert len(ids) == len(set(ids)), f"{index}: duplicate call ids in one message"
            for call in calls:
                assert call["type"] == "function"
                json.loads(call["function"]["arguments"])
            expecting = set(ids) if calls else None
    if expecting:
        assert in_flight_ok and messages[-1].get("tool_calls"), f"calls {expecting} never answered"
    first = next((m for m in messages if m["role"] != "system"), None)
    assert first is None or first["role"] == "user", "the conversation must open with a user message"


CORE_AGENT = str(TESTS / "agents" / "core_agent.py") + ":build"
HOOK_AGENT = str(TESTS / "agents" / "hook_agent.py")


@asynccontextmanager
async def in_process(agent: Any) -> AsyncIterator[Any]:
    """An agent driven in process, shut down however the test ends (MCP servers and the model client)."""
    try:
        yield agent
    finally:
        await agent.shutdown()


async def prompt_until_killed(conn: Any, proc: Any, client: RecordingClient, sid: str, words: str, ready: Any) -> None:
    """Send a prompt and SIGKILL the agent once ready(client) holds."""

    async def send() -> None:
        try:
            await conn.prompt(session_id=sid, prompt=[text(words)])
        except Exception:  # the connection dies with the process; the answer is not the point
            pass

    async with anyio.create_task_group() as group:
        group.start_soon(send)
        await client.wait_for(ready)
        proc.kill()
        await proc.wait()
        group.cancel_scope.cancel()


def git(cwd: Path, *args: str) -> None:
    """Run git in `cwd` as a test user, never running the repository's fsmonitor."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    subprocess.run(["git", "-c", "core.fsmonitor=false", *args], cwd=cwd, check=True, capture_output=True, env=env)


def running(argument: str) -> list[int]:
    """The host pids of the processes with this argument."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and argument.encode() in (proc / "cmdline").read_bytes().split(b"\0"):
                found.append(int(proc.name))
        except OSError:
            continue
    return found
