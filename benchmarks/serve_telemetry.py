"""What tracing costs a tool turn through `crow serve` on PostgreSQL (issue 32: metrics and tracing at most 3%).

    .venv/bin/python benchmarks/serve_load.py --telemetry [--turns 100] [--rounds 9] [--profile out]

Two servers run side by side on one database for the whole run: one with tracing off, one with
OTEL_EXPORTER_OTLP_ENDPOINT naming a real OTLP/HTTP receiver in this process (tests/support); /metrics
is on in both (crow serve always has it) and scraped at the end. One WebSocket client per server runs
tool turns (a read_file call, then a text reply; a new session every BLOCK turns), taking turns between
the two servers (off on, on off, ...), so both see the same load of a shared machine. A round is `turns`
turns on each; its figure is each server's CPU time over the round's whole span (idle included, so the
export thread's work counts wherever it falls), summed over the server's threads from
/proc/PID/task/*/schedstat (nanoseconds; /proc/PID/stat counts in 10 ms ticks). Printed: per round the
CPU per turn off and on and the difference, then the median difference with its range and quartiles.

What metrics cost is measured apart (they cannot be turned off in crow serve), in this process:
telemetry_parts.py feeds one tool turn's events to the observer; it also times the spans of one turn
and their OTLP encoding and sending, the parts of tracing's cost.
"""

from __future__ import annotations

import asyncio
import signal
import statistics
import sys
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
from support.helpers import RecordingClient, crow_env, text
from support.otlp_receiver import otlp_receiver
from support.serve_support import Served, crow_serve, over_ws
from telemetry_parts import export_cost, metrics_cost, spans_cost

from crow_acp.testing import Reply, ScriptedModel, ToolCall

WARM_UP = 5
BLOCK = 20
SETTLE = 6.0
"""Seconds the last round waits before its reading: the export thread's schedule delay is 5 s."""
EXECED = ("-X", "faulthandler")
"""Any option makes crow_serve exec an interpreter: a forked one's pid is the fork helper's, not crow's."""
MODES = ("off", "on")


def cpu_ns(pid: int) -> int:
    """CPU time of all the live threads of `pid`, in nanoseconds (the first field of each schedstat)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):  # a thread that ended meanwhile
            continue
    return total


def tool_then_text(path: Path) -> Any:
    def reply(request: dict) -> Reply:
        if request["messages"][-1]["role"] == "tool":
            return Reply(text="done", usage={"prompt_tokens": 200, "completion_tokens": 5})
        call = ToolCall("read_file", {"path": str(path)})
        return Reply(text="Reading.", tool_calls=[call], usage={"prompt_tokens": 180, "completion_tokens": 8})

    return reply


class Runner:
    """One server and its client, running tool turns in a fresh session every BLOCK turns."""

    def __init__(self, served: Served, conn: Any, cwd: Path) -> None:
        self.served, self.conn, self.cwd = served, conn, cwd
        self.session_id, self.done = "", 0

    async def turn(self) -> None:
        """One tool turn. Every BLOCK turns a new session: a long history would make every turn slower and
        slower (the model's request carries it all), and hide a fixed cost."""
        if self.done % BLOCK == 0:
            self.session_id = (await self.conn.new_session(cwd=str(self.cwd), mcp_servers=[])).session_id
        await self.conn.prompt(session_id=self.session_id, prompt=[text("read the notes")])
        self.done += 1

    def cpu(self) -> int:
        return cpu_ns(self.served.proc.pid)

    async def scrape(self) -> None:
        served = self.served
        async with httpx.AsyncClient() as http:  # as Prometheus would
            got = await http.get(served.url + "/metrics", headers={"Authorization": f"Bearer {served.token}"})
        assert got.status_code == 200 and "crow_tool_calls_total" in got.text


async def start(stack: AsyncExitStack, env: dict[str, str], work: Path) -> Runner:
    served = await stack.enter_async_context(crow_serve(env, roots=(str(work),), python_args=EXECED))
    runner = Runner(served, await stack.enter_async_context(over_ws(RecordingClient(), served)), work)
    for _ in range(WARM_UP):
        await runner.turn()
    return runner


async def one_round(runners: dict[str, Runner], turns: int, settle: float) -> dict[str, float]:
    """CPU seconds per turn of each server over one round of turns taken in turn (off on, on off, ...)."""
    began = {mode: runner.cpu() for mode, runner in runners.items()}
    for index in range(turns):
        for mode in MODES if index % 2 == 0 else MODES[::-1]:
            await runners[mode].turn()
    await asyncio.sleep(settle)
    return {mode: (runner.cpu() - began[mode]) / 1e9 / turns for mode, runner in runners.items()}


async def telemetry_overhead(url: str, turns: int, rounds: int, profile: str | None) -> list[dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        return await _overhead(Path(tmp), url, turns, rounds, profile)


async def _overhead(tmp: Path, url: str, turns: int, rounds: int, profile: str | None) -> list[dict[str, float]]:
    """The homes lie beside the sessions' cwd, not in it: the checkpoints before each prompt snapshot the cwd,
    and would snapshot the servers' own growing checkpoint stores too."""
    work = tmp / "cwd"
    work.mkdir()
    (work / "notes.txt").write_text("hello\n" * 20)
    figures = []
    with otlp_receiver() as (receiver, endpoint):
        async with ScriptedModel(default=tool_then_text(work / "notes.txt")) as model, AsyncExitStack() as stack:
            runners = {}
            for mode in MODES:
                traced = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint} if mode == "on" else {}
                env = crow_env(tmp / f"home-{mode}", model.base_url, CROW_DATABASE_URL=url, CROW_LOG_LEVEL="WARNING")
                runners[mode] = await start(stack, {**env, **traced}, work)
            await asyncio.sleep(SETTLE)  # the warm-up's spans exported before the first round
            spies = [await sample(r.served.proc.pid, f"{profile}-{m}") for m, r in runners.items()] if profile else []
            for round_ in range(rounds):
                figures.append(await one_round(runners, turns, SETTLE if round_ == rounds - 1 else 0.0))
                off, on = figures[-1]["off"], figures[-1]["on"]
                print(
                    f"  round {round_ + 1}: CPU per turn {1e3 * off:.2f} ms off, {1e3 * on:.2f} ms on ({pct(on, off)})"
                )
            for spy in spies:
                spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
                await spy.wait()
            for runner in runners.values():
                await runner.scrape()
        traced_turns = len(receiver.named("invoke_agent"))
        parts = spans_cost(endpoint), export_cost(endpoint)
    assert traced_turns == WARM_UP + rounds * turns, f"{traced_turns} turns traced"
    print(f"the spans of one tool turn: {1e6 * parts[0]:.0f} us CPU of the thread opening them, "
          f"{1e6 * parts[1]:.0f} us to encode and send them (the export thread's)")  # fmt: skip
    return figures


async def sample(pid: int, profile: str) -> asyncio.subprocess.Process:
    """py-spy on a server, every thread, not pausing it: PROFILE.txt, collapsed stacks (pip install py-spy)."""
    spy = str(Path(sys.executable).parent / "py-spy")
    command = [spy, "record", "--pid", str(pid), "--format", "raw", "--threads", "--nonblocking", "--rate", "200"]
    process = await asyncio.create_subprocess_exec(*command, "-o", f"{profile}.txt", stdout=asyncio.subprocess.DEVNULL)
    await asyncio.sleep(1)  # py-spy attaches
    return process


def pct(on: float, off: float) -> str:
    return f"{100 * (on / off - 1):+.1f}%"


def report(figures: list[dict[str, float]], turns: int) -> None:
    overheads = sorted(100 * (f["on"] / f["off"] - 1) for f in figures)
    quartiles = statistics.quantiles(overheads, n=4) if len(overheads) > 1 else overheads * 3
    off = statistics.median(f["off"] for f in figures)
    print(
        f"a tool turn through crow serve on PostgreSQL, tracing on vs off ({len(figures)} rounds of {turns} "
        f"interleaved turns each): server CPU {1e3 * off:.2f} ms per turn off; overhead median "
        f"{statistics.median(overheads):+.1f}% (quartiles {quartiles[0]:+.1f}% .. {quartiles[2]:+.1f}%, "
        f"range {overheads[0]:+.1f}% .. {overheads[-1]:+.1f}%)"
    )
    metrics = metrics_cost()
    print(f"the metrics of one tool turn: {1e6 * metrics:.0f} us CPU, {100 * metrics / off:.2f}% of the turn's")
