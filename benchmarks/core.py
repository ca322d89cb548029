"""Issue 2 figures: crow against the floor a bare acp agent and the raw openai client set, same run.

    .venv/bin/python benchmarks/core.py [--turns 30]

Everything runs on 127.0.0.1 with the scripted model at 0 ms latency; crow is driven as an ACP
client over stdio, exactly as an editor drives it.
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
from history import fill_session

from crow_acp.store.sqlite import SqliteStore
from crow_acp.testing import Reply, ScriptedModel, ToolCall

HERE = Path(__file__).parent
PY = sys.executable
CROW = [PY, "-m", "crow", "acp"]
TIME_SERVER = [PY, "-m", "mcp_server_time", "--local-timezone", "UTC"]
LONG = "tok " * 200


class TimingClient:
    def __init__(self) -> None:
        self.first_chunk: float | None = None

    async def session_update(self, session_id, update, **_):
        if self.first_chunk is None and update.session_update == "agent_message_chunk":
            self.first_chunk = time.perf_counter()

    async def request_permission(self, session_id, tool_call, options, **_):
        raise AssertionError("benchmarks use read-only tools")


def crow_env(home: str, base_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "OPENAI_API_KEY": "bench",
        "OPENAI_BASE_URL": base_url,
        "CROW_HOME": home,
        "CROW_LOG_LEVEL": "WARNING",
    }


async def initialize(conn) -> None:
    await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(),
        client_info=Implementation(name="bench", version="0"),
    )


async def cold_start(command: list[str], env: dict[str, str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        async with spawn_agent_process(TimingClient(), *command, env=env, transport_kwargs={"stderr": None}) as (
            conn,
            _,
        ):
            await initialize(conn)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


async def acp_turns(command, env, turns, mcp_servers=()) -> tuple[float, float, int]:
    """Median turn time and median time to first chunk (s), and the agent's peak RSS (KiB)."""
    client = TimingClient()
    async with spawn_agent_process(client, *command, env=env, transport_kwargs={"stderr": None}) as (conn, proc):
        await initialize(conn)
        sid = (await conn.new_session(cwd=os.getcwd(), mcp_servers=list(mcp_servers))).session_id
        totals, firsts = [], []
        for index in range(turns + 3):
            client.first_chunk = None
            start = time.perf_counter()
            await conn.prompt(session_id=sid, prompt=[text_block("go")])
            if index >= 3:  # the first turns pay one-off imports and connection set-up
                totals.append(time.perf_counter() - start)
                firsts.append((client.first_chunk or start) - start)
        return statistics.median(totals), statistics.median(firsts), peak_rss(proc.pid)


async def raw_stream(base_url: str, turns: int) -> tuple[float, float]:
    """The raw openai client streaming the same reply: median total and time to first content."""
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key="bench")
    totals, firsts = [], []
    for index in range(turns + 3):
        start, first = time.perf_counter(), None
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "go"}], stream=True, stream_options={"include_usage": True}
        )
        async for chunk in stream:
            if first is None and chunk.choices and chunk.choices[0].delta.content:
                first = time.perf_counter()
        if index >= 3:
            totals.append(time.perf_counter() - start)
            firsts.append((first or start) - start)
    await client.close()
    return statistics.median(totals), statistics.median(firsts)


async def minimal_react(base_url: str, turns: int) -> float:
    """An in-process minimal ReAct turn: stream → MCP call over stdio → stream 200 chunks."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from openai import AsyncOpenAI

    llm = AsyncOpenAI(base_url=base_url, api_key="bench")
    params = StdioServerParameters(command=TIME_SERVER[0], args=TIME_SERVER[1:])
    times = []
    async with Client(stdio_client(params)) as mcp:
        await mcp.list_tools()
        for index in range(turns + 3):
            start = time.perf_counter()
            messages = [{"role": "user", "content": "go"}]
            calls = {}
            async for chunk in await llm.chat.completions.create(model="m", messages=messages, stream=True):
                for call in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
                    entry = calls.setdefault(call.index, {"id": call.id, "name": "", "args": ""})
                    entry["name"] += call.function.name or ""
                    entry["args"] += call.function.arguments or ""
            for call in calls.values():
                result = await mcp.call_tool("get_current_time", {"timezone": "UTC"})
                messages += [
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "id": call["id"],
                                "type": "function",
                                "function": {"name": call["name"], "arguments": call["args"]},
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": call["id"], "content": result.content[0].text},
                ]
            async for _ in await llm.chat.completions.create(model="m", messages=messages, stream=True):
                pass
            if index >= 3:
                times.append(time.perf_counter() - start)
    await llm.close()
    return statistics.median(times)


def tool_then_text(request: dict) -> Reply:
    if request["messages"][-1]["role"] == "tool":
        return Reply(text=LONG, chunks=200)
    return Reply(tool_calls=[ToolCall("time__get_current_time", {"timezone": "UTC"})])


def peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def current_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def baseline_rss() -> int:
    proc = await asyncio.create_subprocess_exec(
        PY,
        "-c",
        "import acp, openai, mcp, sys; print(open('/proc/self/status').read())",
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await proc.communicate()
    line = next(text for text in out.decode().splitlines() if text.startswith("VmHWM:"))
    return int(line.split()[1])


async def idle_sessions(env: dict[str, str], count: int) -> int:
    async with spawn_agent_process(TimingClient(), *CROW, env=env, transport_kwargs={"stderr": None}) as (conn, proc):
        await initialize(conn)
        for _ in range(count):
            await conn.new_session(cwd=os.getcwd(), mcp_servers=[])
        await asyncio.sleep(0.2)
        return current_rss(proc.pid)


async def load_time(env: dict[str, str], home: str, messages: int, runs: int, *, warm: bool) -> float:
    """session/load of a stored session with its replay. `warm`: once crow has built its agent (which the
    default agent does after initialize, so a load that comes first also waits for that)."""
    session_id = f"bench-load-{'warm' if warm else 'first'}"
    store = SqliteStore(Path(home) / "sessions.db")
    fill_session(store, session_id, messages)
    await store.close()
    times = []
    for _ in range(runs):
        async with spawn_agent_process(TimingClient(), *CROW, env=env, transport_kwargs={"stderr": None}) as (conn, _):
            await initialize(conn)
            if warm:
                await conn.list_sessions(cwd=os.getcwd())
            start = time.perf_counter()
            await conn.load_session(cwd=os.getcwd(), session_id=session_id, mcp_servers=[])
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def row(name: str, crow: float, floor: float, target: str, unit: str = "ms", scale: float = 1000) -> None:
    ratio = crow / floor if floor else float("nan")
    print(f"{name:<44} {crow * scale:>9.1f} {unit:<3} {floor * scale:>9.1f} {unit:<3} {ratio:>6.2f}x   {target}")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--starts", type=int, default=7)
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="crow-bench-")
    one = ScriptedModel(default=Reply(text="tok", chunks=1)).start()
    many = ScriptedModel(default=Reply(text=LONG, chunks=200)).start()
    tool = ScriptedModel(default=tool_then_text).start()
    try:
        env = crow_env(home, one.base_url)
        echo_1 = [PY, str(HERE / "echo_agent.py"), "1"]
        echo_200 = [PY, str(HERE / "echo_agent.py"), "200"]
        print(f"{'figure':<44} {'crow':>13} {'floor':>13} {'ratio':>7}   target")
        crow_start = await cold_start(CROW, env, args.starts)
        echo_start = await cold_start(echo_1, env, args.starts)
        row("cold start (spawn → initialize)", crow_start, echo_start, "≤ 1.3x echo agent")

        crow_1, _, rss_1 = await acp_turns(CROW, env, args.turns)
        echo_turn_1, _, _ = await acp_turns(echo_1, env, args.turns)
        raw_1, _ = await raw_stream(one.base_url, args.turns)
        row("turn, 1-token reply", crow_1, echo_turn_1 + raw_1, "≤ 2x (echo turn + raw stream)")

        crow_200, crow_first_200, rss_200 = await acp_turns(CROW, crow_env(home, many.base_url), args.turns)
        echo_turn_200, _, _ = await acp_turns(echo_200, env, args.turns)
        raw_200, raw_first_200 = await raw_stream(many.base_url, args.turns)
        row("turn, 200-chunk reply", crow_200, echo_turn_200 + raw_200, "≤ 1.3x (echo turn + raw stream)")
        print(
            f"{'time to first chunk, 200-chunk reply':<44} {crow_first_200 * 1000:>9.1f} ms  "
            f"{raw_first_200 * 1000:>9.1f} ms  "
            f"{(crow_first_200 - raw_first_200) * 1000:>+6.1f} ms  ≤ +3 ms over raw openai"
        )

        time_server = McpServerStdio(name="time", command=TIME_SERVER[0], args=TIME_SERVER[1:], env=[])
        crow_tool, _, rss_tool = await acp_turns(CROW, crow_env(home, tool.base_url), args.turns, [time_server])
        react_tool = await minimal_react(tool.base_url, args.turns)
        row("turn, 1 MCP call (stdio) + 200 chunks", crow_tool, react_tool, "≤ 1.5x in-process minimal ReAct")

        base_rss = await baseline_rss()
        peak = max(rss_1, rss_200, rss_tool)
        row("peak RSS", peak, base_rss, "≤ 1.25x python + acp, openai, mcp", "MiB", 1 / 1024)
        idle = await idle_sessions(env, 100)
        print(f"{'RSS after 100 idle sessions':<44} {idle / 1024:>9.1f} MiB")
        load = await load_time(env, home, 2000, 5, warm=True)
        print(f"{'session/load, 2,000 messages (with replay)':<44} {load * 1000:>9.1f} ms {'':>14} {'':>7}   ≤ 300 ms")
        first = await load_time(env, home, 2000, 5, warm=False)
        print(f"{'  the same as the first request after init':<44} {first * 1000:>9.1f} ms")
    finally:
        for model in (one, many, tool):
            model.stop()


if __name__ == "__main__":
    asyncio.run(main())
