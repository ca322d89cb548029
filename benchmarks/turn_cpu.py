"""CPU time `crow acp` spends per turn, the figure that holds on a busy machine (issue 2's per-turn goals).

    .venv/bin/python benchmarks/turn_cpu.py [--scenario short|stream200|tool|all] [--turns 40]
    .venv/bin/python benchmarks/turn_cpu.py --scenario stream200 --profile /tmp/crow.prof

crow is driven over stdio by an ACP client, as an editor drives it, against the scripted model
(in this process, so its CPU is not counted). The figure is the crow process's own CPU time
(utime + stime from /proc, all its threads) over the measured turns, divided by their number;
wall-clock medians are printed beside it but are only meaningful on a quiet machine. With
--profile, crow runs under cProfile and the stats are written there when it exits.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import statistics
import sys
import tempfile
import time

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import ClientCapabilities, Implementation, McpServerStdio

from crow_acp.testing import Reply, ScriptedModel, ToolCall

PY = sys.executable
TICK = os.sysconf("SC_CLK_TCK")
LONG = "tok " * 200
PER_SESSION = 5


class Client:
    def __init__(self) -> None:
        self.first_chunk: float | None = None

    async def session_update(self, session_id, update, **_):
        if self.first_chunk is None and update.session_update == "agent_message_chunk":
            self.first_chunk = time.perf_counter()

    async def request_permission(self, session_id, tool_call, options, **_):
        raise AssertionError("the benchmark's tools are read-only")


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def tool_then_text(request: dict) -> Reply:
    if request["messages"][-1]["role"] == "tool":
        return Reply(text=LONG, chunks=200)
    return Reply(tool_calls=[ToolCall("time__get_current_time", {"timezone": "UTC"})])


# cProfile on the event-loop thread's CPU clock: time spent descheduled on a busy machine is not counted.
PROFILED = """import cProfile, sys, time
from crow.cli import main
profile = cProfile.Profile(time.thread_time)
try:
    profile.runcall(main, ["acp"])
except SystemExit:
    pass
finally:
    profile.dump_stats({out!r})
"""

SCENARIOS = {
    "short": lambda: Reply(text="tok", chunks=1),
    "stream200": lambda: Reply(text=LONG, chunks=200),
    "tool": lambda: tool_then_text,
}


class Arrivals:
    """The scripted model's answer, noting when each request arrived (the model runs in this process)."""

    def __init__(self, reply) -> None:
        self.reply, self.times = reply, []

    def __call__(self, request: dict) -> Reply:
        self.times.append(time.perf_counter())
        return self.reply(request) if callable(self.reply) else self.reply


async def measure(
    scenario: str, turns: int, warmup: int, profile: str | None, crow: list[str]
) -> tuple[float, float, list[float]]:
    """(crow CPU ms per turn, median wall ms per turn, median ms of: prompt sent → model asked → first chunk
    → answer)."""
    arrivals = Arrivals(SCENARIOS[scenario]())
    model = ScriptedModel(default=arrivals).start()
    home = tempfile.mkdtemp(prefix="crow-turn-cpu-")
    env = {
        **os.environ,
        "OPENAI_API_KEY": "bench",
        "OPENAI_BASE_URL": model.base_url,
        "CROW_HOME": home,
        "CROW_LOG_LEVEL": "WARNING",
    }
    command = [PY, "-c", PROFILED.format(out=profile)] if profile else crow
    servers = [
        McpServerStdio(name="time", command=PY, args=["-m", "mcp_server_time", "--local-timezone", "UTC"], env=[])
    ]
    try:
        client = Client()
        async with spawn_agent_process(client, *command, env=env, cwd=home, transport_kwargs={"stderr": None}) as (
            conn,
            proc,
        ):
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(),
                client_info=Implementation(name="b", version="0"),
            )
            walls, phases, cpu = [], [], 0.0
            for index in range(warmup + turns):
                if index % PER_SESSION == 0:  # short sessions, as the harness has: the history stays small
                    sid = (
                        await conn.new_session(cwd=home, mcp_servers=servers if scenario == "tool" else [])
                    ).session_id
                asked, client.first_chunk = len(arrivals.times), None
                before, start = cpu_seconds(proc.pid), time.perf_counter()
                await conn.prompt(session_id=sid, prompt=[text_block("go")])
                end = time.perf_counter()
                if index >= warmup:
                    walls.append(end - start)
                    first = client.first_chunk or end
                    phases.append((arrivals.times[asked] - start, first - arrivals.times[asked], end - first))
                    cpu += cpu_seconds(proc.pid) - before  # clock ticks: the rounding averages out over many turns
        medians = [statistics.median(phase) * 1000 for phase in zip(*phases, strict=True)]
        return cpu / turns * 1000, statistics.median(walls) * 1000, medians
    finally:
        model.stop()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenario", default="all", choices=[*SCENARIOS, "all"])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3, help="fresh crow processes; the lowest CPU figure is kept")
    parser.add_argument("--profile", help="run crow under cProfile and write the stats here (one process)")
    parser.add_argument(
        "--crow", default=f"{PY} -m crow acp", help="the command that runs crow (another checkout's, to compare)"
    )
    args = parser.parse_args()
    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    for name in names:
        results = [
            await measure(name, args.turns, args.warmup, args.profile, shlex.split(args.crow))
            for _ in range(1 if args.profile else args.repeat)
        ]
        cpu, wall, phases = min(results)
        split = " → ".join(f"{ms:.2f}" for ms in phases)
        print(
            f"{name:<10} crow CPU {cpu:7.2f} ms/turn   wall median {wall:7.2f} ms   "
            f"[sent → asked → first chunk → answer: {split} ms]"
            f"   ({args.turns} turns, best of {len(results)})"
        )


if __name__ == "__main__":
    asyncio.run(main())
