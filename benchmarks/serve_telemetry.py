"""What metrics and tracing cost a tool turn through `crow serve` on PostgreSQL (issue 32: at most 3%).

    .venv/bin/python benchmarks/serve_load.py --telemetry [--turns 40] [--rounds 3]

Each round starts two servers one after the other on the same database: one with tracing off, one with
OTEL_EXPORTER_OTLP_ENDPOINT naming a real OTLP/HTTP receiver in this process (tests/support); /metrics
is always on in crow serve, and is scraped after each run. One WebSocket client runs `turns` tool turns
(a read_file call, then a text reply; three more first, to warm up). Printed: the median wall time per
turn and the server's CPU time per turn (from /proc: the steadier figure on a shared machine), off
and on, the median of the rounds, and the difference in percent. Metrics cannot be turned off in crow
serve, so their share is measured apart: the CPU time the metrics observer and the store timing take for
the events and store operations of one tool turn, fed to them in this process.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from support.helpers import RecordingClient, crow_env, text
from support.otlp_receiver import otlp_receiver
from support.serve_support import Served, crow_serve, over_ws

from crow_acp.testing import Reply, ScriptedModel, ToolCall

WARM_UP = 3
EXECED = ("-X", "faulthandler")
"""Any option makes crow_serve exec an interpreter: a forked one's pid is the fork helper's, not crow's."""


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tool_then_text(path: Path) -> Any:
    def reply(request: dict) -> Reply:
        if request["messages"][-1]["role"] == "tool":
            return Reply(text="done", usage={"prompt_tokens": 200, "completion_tokens": 5})
        call = ToolCall("read_file", {"path": str(path)})
        return Reply(text="Reading.", tool_calls=[call], usage={"prompt_tokens": 180, "completion_tokens": 8})

    return reply


async def tool_turns(served: Served, cwd: Path, turns: int) -> tuple[float, float]:
    """(median wall seconds per turn, server CPU seconds per turn) over `turns` measured tool turns."""
    async with over_ws(RecordingClient(), served) as conn:
        sid = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        for _ in range(WARM_UP):
            await conn.prompt(session_id=sid, prompt=[text("read the notes")])
        walls, cpu = [], cpu_seconds(served.proc.pid)
        for _ in range(turns):
            began = time.perf_counter()
            await conn.prompt(session_id=sid, prompt=[text("read the notes")])
            walls.append(time.perf_counter() - began)
        cpu = cpu_seconds(served.proc.pid) - cpu
    async with httpx.AsyncClient() as http:  # metrics are on in both: scraped, as Prometheus would
        scraped = await http.get(served.url + "/metrics", headers={"Authorization": f"Bearer {served.token}"})
        assert scraped.status_code == 200 and "crow_tool_calls_total" in scraped.text
    return statistics.median(walls), cpu / turns


async def telemetry_overhead(url: str, turns: int = 40, rounds: int = 3) -> dict[str, tuple[float, float]]:
    """{"off": (wall, cpu), "on": (wall, cpu)} per tool turn, each the median of `rounds` server runs."""
    work = Path(tempfile.mkdtemp())
    (work / "notes.txt").write_text("hello\n" * 20)
    runs: dict[str, list[tuple[float, float]]] = {"off": [], "on": []}
    with otlp_receiver() as (receiver, endpoint):
        async with ScriptedModel(default=tool_then_text(work / "notes.txt")) as model:
            for round_ in range(rounds):
                for mode in ("off", "on"):
                    traced = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint} if mode == "on" else {}
                    home = work / f"home-{mode}-{round_}"
                    env = crow_env(home, model.base_url, CROW_DATABASE_URL=url, CROW_LOG_LEVEL="WARNING", **traced)
                    async with crow_serve(env, roots=(str(work),), python_args=EXECED) as served:
                        runs[mode].append(await tool_turns(served, work, turns))
                        wall, cpu = runs[mode][-1]
                        print(
                            f"  round {round_ + 1}, tracing {mode}: {1000 * wall:.1f} ms wall, {1000 * cpu:.2f} ms CPU"
                        )
                        served.proc.terminate()  # tracing flushes its spans on the way out
                        await served.proc.wait()
        exported = len(receiver.named("invoke_agent"))
        print(f"the spans of one tool turn: {1e6 * spans_cost(endpoint):.0f} us CPU of the thread opening them")
    assert exported == rounds * (turns + WARM_UP), f"{exported} turns traced"
    return {
        mode: (statistics.median(w for w, _ in got), statistics.median(c for _, c in got)) for mode, got in runs.items()
    }


def metrics_cost(turns: int = 20_000) -> float:
    """CPU seconds the metrics take for one tool turn's events and store operations (in this process)."""
    from crow_acp.events import (
        ModelCallFinished,
        TextDelta,
        ToolCallFinished,
        ToolCallRunning,
        ToolCallStarted,
        ToolResult,
        ToolView,
        TurnFinished,
        Usage,
    )
    from crow_acp.web.metrics import ServeMetrics

    metrics, sid = ServeMetrics(), "s" * 32
    observer = metrics.observer("default")
    events = [
        TextDelta(sid, "m1", "Reading."),
        ToolCallStarted(sid, "c", "read_file", {}, ToolView("Read notes.txt", "read")),
        ModelCallFinished(sid, Usage(180, 8), "tool_calls", 128_000),
        ToolCallRunning(sid, "c"),
        ToolCallFinished(sid, "c", "read_file", ToolResult("hello")),
        TextDelta(sid, "m2", "done"),
        ModelCallFinished(sid, Usage(200, 5), "stop", 128_000),
        TurnFinished(sid, "end_turn"),
    ]
    began = time.thread_time()
    for _ in range(turns):
        observer.turn_started(sid)
        for event in events:
            observer(event)
        for kind in ("write", "write", "write", "call"):
            metrics.store_timing(kind, 0.001)
    return (time.thread_time() - began) / turns


def spans_cost(endpoint: str, turns: int = 400) -> float:
    """CPU seconds of this thread the spans of one tool turn take with the real SDK (invoke_agent, two chats, one
    execute_tool), exported to `endpoint` by the SDK's thread (its encoding and sending are not counted here).
    400 turns: their 1,600 spans fit the SDK's queue (2,048), so none is dropped."""
    from crow_acp.events import Usage
    from crow_acp.telemetry import gen_ai, spans
    from crow_acp.telemetry.otel import OtelTracer

    def turn() -> None:
        with gen_ai.invoke_agent("crow", "s" * 32, "read the notes") as agent:
            with gen_ai.chat("gpt-4o-mini", "openai") as chat:
                gen_ai.replied(chat, Usage(180, 8), "tool_calls", ["Reading."])
            with gen_ai.execute_tool("read_file", "call_0123456789ab", {"path": "notes.txt"}) as tool:
                gen_ai.tool_done(tool, "hello", False)
            with gen_ai.chat("gpt-4o-mini", "openai") as chat:
                gen_ai.replied(chat, Usage(200, 5), "stop", ["done"])
            agent.set("crow.stop_reason", "end_turn")

    tracer = OtelTracer(endpoint + "/v1/traces")
    spans.install(tracer)
    try:
        began = time.thread_time()
        for _ in range(turns):
            turn()
        return (time.thread_time() - began) / turns
    finally:
        spans.shutdown()


def report(figures: dict[str, tuple[float, float]], turns: int, rounds: int) -> None:
    (wall_off, cpu_off), (wall_on, cpu_on) = figures["off"], figures["on"]
    print(
        f"a tool turn through crow serve on PostgreSQL ({turns} turns x {rounds} rounds, medians): "
        f"wall {1000 * wall_off:.1f} ms off, {1000 * wall_on:.1f} ms on ({100 * (wall_on / wall_off - 1):+.1f}%); "
        f"server CPU {1000 * cpu_off:.2f} ms off, {1000 * cpu_on:.2f} ms on ({100 * (cpu_on / cpu_off - 1):+.1f}%)"
    )
    metrics = metrics_cost()
    print(f"the metrics of one tool turn: {1e6 * metrics:.0f} us CPU, {100 * metrics / cpu_off:.2f}% of the turn's")
