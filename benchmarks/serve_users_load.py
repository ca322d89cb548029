"""Turns through one `crow serve` on PostgreSQL: 200 concurrent sessions from 4 users, with and without
the ownership checks (issue 32).

    .venv/bin/python benchmarks/serve_users_load.py                      # 200 sessions x 5 turns, each mode
    .venv/bin/python benchmarks/serve_users_load.py --sessions 40 --turns 3
    .venv/bin/python benchmarks/serve_users_load.py --base /path/to/checkout   # also crow serve from that tree

Each session is its own WebSocket connection: session/new, then `--turns` prompts one after another, all
sessions at once; the scripted model answers each with a short text at once, so the figures are crow's
(ACP, the turn, the store), not a model's. Prints, per mode, turns per second over the whole run, the
p50 and p99 of one prompt's wall time (request to answer), and the server's CPU time per turn (from /proc:
the steadier figure on a shared machine). The modes:

    one user   the single-token mode: every session `default`'s, who is an admin (ownership stored, checked)
    4 users    `--users` with 4 users of 50 sessions each: every check asks the store whose a session is
    base       (with --base) the same 4 users through a crow without owners: no check at all

The machine is shared (CI: 2 busy cores): compare modes of one run, not runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]
os.environ["CROW_TEST_EXEC"] = "1"  # crow serve exec'd, not forked from this tree: the base mode's PYTHONPATH holds

from support.helpers import crow_env  # noqa: E402
from support.postgres_server import PostgresServer  # noqa: E402
from support.serve_support import Served, crow_serve, over_ws  # noqa: E402

from crow_acp.testing import Reply, ScriptedModel  # noqa: E402

USERS = ("ana", "ben", "cai", "dev")


class Quiet:
    """An ACP client that drops every update."""

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        pass

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a text turn asks for no permission")


def add_users(env: dict[str, str], root: str) -> dict[str, str]:
    tokens = {}
    for name in USERS:
        done = subprocess.run(
            [sys.executable, "-m", "crow", "serve", "user", "add", name, "--root", root],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        tokens[name] = done.stdout.strip()
    return tokens


class Start:
    """The turns start together, once every session is open (opening is not what is measured)."""

    def __init__(self, sessions: int) -> None:
        self.waiting = sessions
        self.all_open = asyncio.Event()
        self.go = asyncio.Event()

    async def opened(self) -> None:
        self.waiting -= 1
        if self.waiting <= 0:
            self.all_open.set()
        await self.go.wait()


async def one_session(served: Served, token: str | None, cwd: str, turns: int, start: Start) -> list[float]:
    async with over_ws(Quiet(), served, token) as conn:
        sid = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id
        await start.opened()
        walls = []
        for n in range(turns):
            began = time.perf_counter()
            answer = await conn.prompt(session_id=sid, prompt=[{"type": "text", "text": f"turn {n}"}])
            walls.append(time.perf_counter() - began)
            assert answer.stop_reason == "end_turn", answer
        return walls


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process, from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run_mode(
    env: dict[str, str], args: tuple[str, ...], tokens: list[str | None], sessions: int, turns: int, cwd: str
) -> tuple[float, float, list[float]]:
    async with crow_serve(env, *args, "--max-connections", str(sessions + 8), token=None, roots=(cwd,)) as served:
        warm = Start(1)
        warm.go.set()
        await one_session(served, tokens[0], cwd, 1, warm)  # warm up: imports, the database connections
        start = Start(sessions)
        tasks = [
            asyncio.create_task(one_session(served, tokens[n % len(tokens)], cwd, turns, start))
            for n in range(sessions)
        ]
        await start.all_open.wait()
        began, cpu = time.perf_counter(), cpu_seconds(served.proc.pid)
        start.go.set()
        walls = [wall for result in await asyncio.gather(*tasks) for wall in result]
        return time.perf_counter() - began, cpu_seconds(served.proc.pid) - cpu, walls


def report(name: str, elapsed: float, cpu: float, walls: list[float]) -> str:
    walls = sorted(walls)
    p50 = statistics.median(walls)
    p99 = walls[min(len(walls) - 1, int(len(walls) * 0.99))]
    return (
        f"{name:>9}: {len(walls) / elapsed:7.1f} turns/s   p50 {1000 * p50:6.0f} ms   p99 {1000 * p99:6.0f} ms"
        f"   server CPU {1000 * cpu / len(walls):5.1f} ms/turn"
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--base", help="a checkout of crow without owners, served as the `base` mode")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp())
    cwd = str((work / "work").resolve())
    os.makedirs(cwd)
    lines = []
    with PostgresServer() as postgres:
        async with ScriptedModel(default=lambda request: Reply(text="done")) as model:
            modes: list[tuple[str, dict[str, str], tuple[str, ...], list[str | None]]] = []
            home = work / "single"
            home.mkdir(mode=0o700)
            single = crow_env(home, model.base_url, CROW_DATABASE_URL=postgres.new_database(), CROW_LOG_LEVEL="WARNING")
            modes.append(("one user", {**single, "CROW_SERVE_TOKEN": "bench-token"}, (), ["bench-token"]))
            home = work / "users"
            home.mkdir(mode=0o700)
            users = crow_env(home, model.base_url, CROW_DATABASE_URL=postgres.new_database(), CROW_LOG_LEVEL="WARNING")
            tokens = add_users(users, cwd)
            modes.append(("4 users", users, ("--users", str(home / "serve-users.toml")), list(tokens.values())))
            if options.base:
                base = {**users, "CROW_DATABASE_URL": postgres.new_database(), "PYTHONPATH": options.base}
                modes.append(("base", base, ("--users", str(home / "serve-users.toml")), list(tokens.values())))
            for name, env, args, mode_tokens in modes:
                elapsed, cpu, walls = await run_mode(env, args, mode_tokens, options.sessions, options.turns, cwd)
                lines.append(report(name, elapsed, cpu, walls))
                print(lines[-1], flush=True)
    print(f"{options.sessions} concurrent sessions x {options.turns} turns through one crow serve on PostgreSQL:")
    for line in lines:
        print("  " + line)


if __name__ == "__main__":
    asyncio.run(main())
