"""Issue 18 item 10 figures: a 50 MB model reply and a reply of 200 tool calls, against [limits].

    .venv/bin/python benchmarks/big_reply.py

crow is driven over stdio as an editor drives it, with the scripted model at 0 ms latency. Each
figure is one prompt: its wall time, and crow's peak RSS (VmHWM) after it.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import ClientCapabilities, Implementation, McpServerStdio

from crow_acp.testing import Reply, ScriptedModel, ToolCall

ECHO = Path(__file__).resolve().parents[1] / "tests" / "mcp_servers" / "echo_server.py"


class Client:
    async def session_update(self, session_id, update, **_):
        pass

    async def request_permission(self, session_id, tool_call, options, **_):
        raise AssertionError("only read-only tools here")


def peak_mib(pid: int) -> float:
    line = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


async def one(reply: Reply, servers: list) -> tuple[float, float, str]:
    home = tempfile.mkdtemp(prefix="crow-bench-")
    async with ScriptedModel([reply, Reply(text="ok")]) as model:
        env = {**os.environ, "CROW_HOME": home, "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": model.base_url}
        async with spawn_agent_process(
            Client(), sys.executable, "-m", "crow", "acp", env=env, transport_kwargs={"limit": 2**26}
        ) as (conn, proc):
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(),
                client_info=Implementation(name="bench", version="0"),
            )
            sid = (await conn.new_session(cwd=home, mcp_servers=servers)).session_id
            started = time.perf_counter()
            stop = (await conn.prompt(session_id=sid, prompt=[text_block("go")])).stop_reason
            return time.perf_counter() - started, peak_mib(proc.pid), stop


async def main() -> None:
    seconds, peak, stop = await one(Reply(text="word " * 10_000_000, chunks=5_000), [])
    print(f"50 MB reply in 10 KB chunks: {seconds:.1f} s, peak RSS {peak:.0f} MiB, {stop}")
    echo = McpServerStdio(name="echo", command=sys.executable, args=[str(ECHO)], env=[])
    calls = [ToolCall("echo__echo", {"text": str(n)}) for n in range(200)]
    seconds, peak, stop = await one(Reply(tool_calls=calls), [echo])
    print(f"200 tool calls in one reply: {seconds:.2f} s, peak RSS {peak:.0f} MiB, {stop}")


if __name__ == "__main__":
    asyncio.run(main())
