"""Issue 10 figures: session/new with a slow MCP server, and cold start against the bare SDK echo agent.

    .venv/bin/python benchmarks/parity.py [--runs 5] [--starts 11] [--delay 5]

session/new: one stdio MCP server configured that takes --delay seconds to start; the figure is
the time from sending session/new to its response, and, for comparison, the time until the
server is up (what session/new used to wait for): the first prompt's "Connecting to MCP servers"
step ends then. Cold start: spawn → initialize response, crow and the echo agent alternating in
one run, medians.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import ClientCapabilities, Implementation, McpServerStdio

from crow_acp.testing import Reply, ScriptedModel

HERE = Path(__file__).resolve().parent
PY = sys.executable
CROW = [PY, "-m", "crow", "acp"]
ECHO = [PY, str(HERE / "echo_agent.py")]
LIVE = HERE.parent / "tests" / "mcp_servers" / "live_server.py"


class Client:
    def __init__(self) -> None:
        self.connected: float | None = None

    async def session_update(self, session_id, update, **_):
        if getattr(update, "title", None) == "Connecting to MCP servers" and update.status in ("completed", "failed"):
            self.connected = time.perf_counter()

    async def request_permission(self, session_id, tool_call, options, **_):
        raise AssertionError("no permission requests in this benchmark")


async def initialize(conn) -> None:
    await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(),
        client_info=Implementation(name="bench", version="0"),
    )


def env_for(home: str, base_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "OPENAI_API_KEY": "bench",
        "OPENAI_BASE_URL": base_url,
        "CROW_HOME": home,
        "CROW_LOG_LEVEL": "WARNING",
    }


async def slow_server_session(env: dict[str, str], delay: float, runs: int) -> tuple[float, float]:
    """Median session/new response time, and median time until the slow server was up (s)."""
    server = McpServerStdio(name="slow", command=PY, args=[str(LIVE), "--delay", str(delay)], env=[])
    responses, ups = [], []
    for _ in range(runs):
        client = Client()
        async with spawn_agent_process(client, *CROW, env=env, transport_kwargs={"stderr": None}) as (conn, _):
            await initialize(conn)
            await conn.new_session(cwd=os.getcwd(), mcp_servers=[])  # one-off imports, as an editor's first session
            start = time.perf_counter()
            sid = (await conn.new_session(cwd=os.getcwd(), mcp_servers=[server])).session_id
            responses.append(time.perf_counter() - start)
            await conn.prompt(session_id=sid, prompt=[text_block("go")])
            ups.append((client.connected or start) - start)
    return statistics.median(responses), statistics.median(ups)


async def cold_starts(env: dict[str, str], runs: int) -> tuple[float, float]:
    """Median spawn → initialize for crow and for the echo agent, alternating so both see the same load."""
    times: dict[str, list[float]] = {"crow": [], "echo": []}
    for _ in range(runs):
        for name, command in (("crow", CROW), ("echo", ECHO)):
            start = time.perf_counter()
            async with spawn_agent_process(Client(), *command, env=env, transport_kwargs={"stderr": None}) as (conn, _):
                await initialize(conn)
                times[name].append(time.perf_counter() - start)
    return statistics.median(times["crow"]), statistics.median(times["echo"])


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--starts", type=int, default=11)
    parser.add_argument("--delay", type=float, default=5.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home, ScriptedModel(default=Reply(text="ok")) as model:
        (Path(home) / "config.toml").write_text("[timeouts]\nmcp_connect = 30\n[titles]\nenabled = false\n")
        env = env_for(home, model.base_url)
        response, up = await slow_server_session(env, args.delay, args.runs)
        crow, echo = await cold_starts(env, args.starts)
    print(
        f"session/new, 1 MCP server taking {args.delay:g} s to start: {response * 1000:.1f} ms "
        f"(server up after {up * 1000:.0f} ms; target <= 100 ms)"
    )
    print(
        f"cold start (spawn -> initialize): crow {crow * 1000:.0f} ms, echo agent {echo * 1000:.0f} ms, "
        f"{crow / echo:.2f}x (target <= 1.15x)"
    )


if __name__ == "__main__":
    asyncio.run(main())
