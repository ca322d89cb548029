"""Running `crow serve` for the tests, and the SDK's own HTTP and WebSocket clients against it."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
from acp import PROTOCOL_VERSION, connect_to_agent
from acp.schema import ClientCapabilities, Implementation

from support import spawn
from support.helpers import free_port

TOKEN = "test-serve-token"
"""The token crow_serve gives a server by default (CROW_SERVE_TOKEN), and the clients here send."""


@dataclass
class Served:
    proc: asyncio.subprocess.Process
    url: str
    token: str | None

    @property
    def acp(self) -> str:
        return self.url + "/acp"

    @property
    def ws(self) -> str:
        return self.url.replace("http://", "ws://") + "/acp"

    async def stop(self) -> int:
        """SIGTERM, as a service manager stops it: the server drains and exits."""
        if self.proc.returncode is None:
            self.proc.terminate()
        return await self.proc.wait()


@asynccontextmanager
async def crow_serve(
    env: dict[str, str],
    *args: str,
    python_args: tuple[str, ...] = (),
    token: str | None = TOKEN,
    client_commands: bool = True,
    preexec_fn: Any = None,
    roots: tuple[str, ...] = (tempfile.gettempdir(),),
) -> AsyncIterator[Served]:
    """`python [PYTHON_ARGS] -m crow serve ARGS` on a free port, once /health answers 200: with `token` in
    CROW_SERVE_TOKEN (None: none given), letting clients start the test MCP servers (helpers.echo_stdio),
    and `--root` each of `roots` (the tests' sessions live in tmp_path)."""
    args = (*(f"--root={root}" for root in roots), *args)
    if token is not None:
        env = {**env, "CROW_SERVE_TOKEN": token}
    if client_commands:
        args = ("--allow-client-command", spawn.python(), *args)
    for _ in range(3):  # another process may take the free port first
        port = free_port()
        python = [sys.executable, *python_args] if python_args else [spawn.python()]  # options need a real interpreter
        proc = await asyncio.create_subprocess_exec(
            *python, "-m", "crow", "serve", "--port", str(port), *args, env=env, stderr=None, preexec_fn=preexec_fn
        )
        if await _healthy(proc, f"http://127.0.0.1:{port}"):
            break
        await proc.wait()
    else:
        raise RuntimeError(f"crow serve exited with {proc.returncode}")
    try:
        yield Served(proc, f"http://127.0.0.1:{port}", env.get("CROW_SERVE_TOKEN"))
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


async def _healthy(proc: asyncio.subprocess.Process, url: str) -> bool:
    async with httpx.AsyncClient() as http:
        with anyio.fail_after(60):
            while proc.returncode is None:
                try:
                    if (await http.get(url + "/health")).status_code == 200:
                        return True
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.1)
    return False


async def initialize(conn: Any) -> Any:
    return await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(),
        client_info=Implementation(name="crow-tests", version="0"),
    )


def _bearer(token: str | None) -> dict[str, str] | None:
    return {"Authorization": f"Bearer {token}"} if token else None


@asynccontextmanager
async def _connected(client: Any, transport: Any) -> AsyncIterator[Any]:
    """An initialized SDK client connection over `transport`, closed with it."""
    conn = connect_to_agent(client, transport, use_unstable_protocol=True)
    try:
        await initialize(conn)
        yield conn
    finally:
        await conn.close()
        await transport.close()


SERVED = "served"
"""over_http/over_ws's default token: the server's own."""


@asynccontextmanager
async def over_http(client: Any, served: Served, token: str | None = SERVED) -> AsyncIterator[Any]:
    from acp.http import create_http_stream

    headers = _bearer(served.token if token == SERVED else token)
    async with _connected(client, create_http_stream(served.acp, headers=headers)) as conn:
        yield conn


@asynccontextmanager
async def over_ws(client: Any, served: Served, token: str | None = SERVED) -> AsyncIterator[Any]:
    from acp.ws.client import create_websocket_stream

    headers = _bearer(served.token if token == SERVED else token)
    async with _connected(client, await create_websocket_stream(served.ws, headers=headers)) as conn:
        yield conn
