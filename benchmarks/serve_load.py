"""`session/load` of a 2,000-message session from PostgreSQL through `crow serve`, over HTTP and WebSocket.

    .venv/bin/python benchmarks/serve_load.py                  # median of 7 loads per transport
    .venv/bin/python benchmarks/serve_load.py --profile out    # also sample the server with py-spy:
                                                               # out.txt, collapsed stacks (pip install py-spy)
    .venv/bin/python benchmarks/serve_load.py --telemetry      # a tool turn, tracing off and on
                                                               # (benchmarks/serve_telemetry.py; with
                                                               # --profile, py-spy on the traced server)

Prints, per transport: the client's wall time from the request to the response (the whole replay
arrives first), and the CPU time the crow serve process spent on it (read from /proc: the machine is
shared, so CPU time is the steadier figure). The goal (issue 11) is at most 300 ms wall.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]

from history import fill_session  # noqa: E402
from support.helpers import crow_env  # noqa: E402
from support.postgres_server import PostgresServer  # noqa: E402
from support.serve_support import Served, crow_serve, over_http, over_ws  # noqa: E402

from crow_acp.store.postgres import PostgresStore  # noqa: E402
from crow_acp.testing import ScriptedModel  # noqa: E402

SESSION = "bench-load"


class Counting:
    """An ACP client that only counts the replayed updates."""

    def __init__(self) -> None:
        self.updates = 0

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates += 1

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a replay asks for no permission")


def cpu_seconds(pid: int | None = None) -> float:
    """User plus system CPU time of a process (this one by default), from /proc/PID/stat."""
    fields = Path(f"/proc/{pid or 'self'}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def one_load(transport: Any, served: Served, expected: int) -> tuple[float, float, float]:
    client = Counting()
    async with transport(client, served) as conn:
        server, mine, began = cpu_seconds(served.proc.pid), cpu_seconds(), time.perf_counter()
        await conn.load_session(cwd=os.getcwd(), session_id=SESSION, mcp_servers=[])
        wall, server, mine = time.perf_counter() - began, cpu_seconds(served.proc.pid) - server, cpu_seconds() - mine
        seen = client.updates  # at the response: the whole replay came before it
    assert seen >= expected, f"{seen} updates before the response, {expected} expected"
    return wall, server, mine


async def measure(url: str, runs: int, profile: str | None) -> dict[str, tuple[float, ...]]:
    work = Path(tempfile.mkdtemp())
    async with ScriptedModel() as model:
        env = crow_env(work, model.base_url, CROW_DATABASE_URL=url, CROW_LOG_LEVEL="WARNING")
        async with crow_serve(env) as served:
            expected = 0
            client = Counting()
            async with over_ws(client, served) as conn:  # warm up: imports, the database pool
                await conn.load_session(cwd=os.getcwd(), session_id=SESSION, mcp_servers=[])
                expected = client.updates - 1  # the slash commands may follow the response
            spy = await _sample(served.proc.pid, profile) if profile else None
            figures = {}
            for name, transport in (("HTTP", over_http), ("WebSocket", over_ws)):
                loads = [await one_load(transport, served, expected) for _ in range(runs)]
                figures[name] = tuple(statistics.median(figure) for figure in zip(*loads, strict=True))
            if spy is not None:
                spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
                await spy.wait()
    return figures


async def _sample(pid: int, profile: str) -> asyncio.subprocess.Process:
    command = ["py-spy", "record", "--pid", str(pid), "--format", "raw", "--rate", "250", "-o", f"{profile}.txt"]
    spy = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.DEVNULL)
    await asyncio.sleep(1)  # py-spy attaches
    return spy


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--profile", help="cProfile the server into PROFILE.prof")
    parser.add_argument("--telemetry", action="store_true", help="a tool turn's time with tracing off and on")
    parser.add_argument("--turns", type=int, default=120, help="--telemetry: tool turns per server in a round")
    parser.add_argument("--rounds", type=int, default=9, help="--telemetry: rounds, each off and on interleaved")
    args = parser.parse_args()
    with PostgresServer(durable=True) as postgres:
        if args.telemetry:
            await telemetry_figures(postgres, args.turns, args.rounds, args.profile)
        else:
            await load_figures(postgres, args.messages, args.runs, args.profile)


async def telemetry_figures(postgres: PostgresServer, turns: int, rounds: int, profile: str | None) -> None:
    from serve_telemetry import report, telemetry_overhead

    report(await telemetry_overhead(postgres.new_database(), turns, rounds, profile), turns)


async def load_figures(postgres: PostgresServer, messages: int, runs: int, profile: str | None = None) -> None:
    url = postgres.new_database()
    store = PostgresStore(url)
    fill_session(store, SESSION, messages)
    await store.close()
    figures = await measure(url, runs, profile)
    for name, (wall, server, client) in figures.items():
        print(
            f"session/load of {messages:,} messages from PostgreSQL through crow serve over {name}: "
            f"{1000 * wall:.0f} ms median wall; CPU: server {1000 * server:.0f} ms, client {1000 * client:.0f} ms "
            f"(medians of {runs} loads)"
        )


if __name__ == "__main__":
    asyncio.run(main())
