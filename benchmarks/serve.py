"""`crow serve` under load, and the store's cost per turn: SQLite against PostgreSQL.

    .venv/bin/python benchmarks/serve.py            # every figure (starts its own PostgreSQL)
    .venv/bin/python benchmarks/serve.py --only load     # = benchmarks/serve_load.py (HTTP and WebSocket)

Figures: 200 concurrent sessions, each running one tool turn (read_file, then an answer) through one
`crow serve` over WebSocket against a 0 ms scripted model: throughput and p50/p99 turn time; the same
spread over two servers on one PostgreSQL; `session/load` of a 2,000-message session from PostgreSQL
through `crow serve`; the store's time per turn (4 messages, a title, a flush) on each backend.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]

from serve_load import cpu_seconds, load_figures  # noqa: E402
from support.helpers import crow_env, text  # noqa: E402
from support.postgres_server import PostgresServer  # noqa: E402
from support.serve_support import crow_serve, over_ws  # noqa: E402

from crow_acp.history import EntryMeta, StoredMessage  # noqa: E402
from crow_acp.store import SessionRecord  # noqa: E402
from crow_acp.store.postgres import PostgresStore  # noqa: E402
from crow_acp.store.sqlite import SqliteStore  # noqa: E402
from crow_acp.testing import Reply, ScriptedModel, ToolCall  # noqa: E402


class Quiet:
    """An ACP client that only counts updates."""

    updates = 0

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates += 1

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("read_file needs no permission")


def tool_then_answer(request: dict) -> Reply:
    """The 0 ms model: read the file first, then answer once its result is in."""
    if request["messages"][-1]["role"] == "tool":
        return Reply(text="The notes say hello.")
    return Reply(text="Reading.", tool_calls=[ToolCall("read_file", {"path": "notes.txt"})])


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def concurrent_turns(servers: int, sessions: int, connections: int, database: str | None) -> dict[str, float]:
    work = Path(tempfile.mkdtemp())
    (work / "notes.txt").write_text("hello\n")
    async with ScriptedModel(default=tool_then_answer) as model:
        envs = []
        for index in range(servers):
            home = work / f"home-{index}"
            home.mkdir()
            extra = {"CROW_DATABASE_URL": database, "CROW_HOST_ID": f"bench-{index}"} if database else {}
            envs.append(crow_env(home, model.base_url, CROW_LOG_LEVEL="WARNING", **extra))
        async with _servers(envs) as served:
            per_connection = sessions // connections
            times: list[float] = []

            async def one_connection(index: int) -> None:
                async with over_ws(Quiet(), served[index % len(served)]) as conn:
                    sids = [
                        (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
                        for _ in range(per_connection)
                    ]
                    opened.append(len(sids))
                    await start.wait()
                    await asyncio.gather(*(turn(conn, sid) for sid in sids))

            async def turn(conn: Any, sid: str) -> None:
                began = time.perf_counter()
                reply = await conn.prompt(session_id=sid, prompt=[text("what do the notes say?")])
                assert reply.stop_reason == "end_turn"
                times.append(time.perf_counter() - began)

            start, opened = asyncio.Event(), []
            tasks = [asyncio.create_task(one_connection(i)) for i in range(connections)]
            while len(opened) < connections:  # noqa: ASYNC110 (every session opens first: not measured)
                await asyncio.sleep(0.05)
            cpu, began = sum(cpu_seconds(s.proc.pid) for s in served), time.perf_counter()
            start.set()
            await asyncio.gather(*tasks)
            wall = time.perf_counter() - began
            cpu = sum(cpu_seconds(s.proc.pid) for s in served) - cpu
    assert len(times) == sessions, f"{len(times)} of {sessions} turns finished"
    return {
        "turns/s": sessions / wall,
        "p50 ms": 1000 * percentile(times, 0.5),
        "p99 ms": 1000 * percentile(times, 0.99),
        "wall s": wall,
        "server CPU ms/turn": 1000 * cpu / sessions,
    }


class _servers:
    def __init__(self, envs: list[dict[str, str]]) -> None:
        self.envs = envs
        self.stack: Any = None

    async def __aenter__(self) -> list[Any]:
        from contextlib import AsyncExitStack

        self.stack = AsyncExitStack()
        return [await self.stack.enter_async_context(crow_serve(env)) for env in self.envs]

    async def __aexit__(self, *exc: object) -> None:
        await self.stack.aclose()


async def store_per_turn(store: Any, turns: int) -> float:
    """Microseconds of one turn's store work as the loop does it: four appends, a title, then a flush."""
    now = time.time()
    for index in range(turns):
        store.create(SessionRecord(f"t{index}", "/w", None, now, now, {}))
    await store.flush()
    began = time.perf_counter()
    for index in range(turns):
        sid = f"t{index}"
        store.append(sid, StoredMessage({"role": "user", "content": "question " * 20}, EntryMeta("prompt"), row_id=1))
        store.append(
            sid,
            StoredMessage(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
                    ],
                },
                row_id=2,
            ),
        )
        store.append(sid, StoredMessage({"role": "tool", "tool_call_id": "c", "content": "result " * 30}, row_id=3))
        store.append(sid, StoredMessage({"role": "assistant", "content": "answer " * 40}, row_id=4))
        store.update(sid, title="a title")
        await store.flush()
    elapsed = time.perf_counter() - began
    await store.close()
    return 1e6 * elapsed / turns


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=["one", "two", "load", "store"])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--connections", type=int, default=50)
    args = parser.parse_args()
    with PostgresServer(durable=True) as postgres:
        if args.only in (None, "store"):
            sqlite_us = await store_per_turn(SqliteStore(Path(tempfile.mkdtemp()) / "sessions.db"), 300)
            postgres_us = await store_per_turn(PostgresStore(postgres.new_database()), 300)
            print(
                f"store per turn (4 appends + title + flush): SQLite {sqlite_us:.0f} µs, "
                f"PostgreSQL {postgres_us:.0f} µs"
            )
        if args.only in (None, "load"):
            await load_figures(postgres, 2000, 7)
        if args.only in (None, "one"):
            one = await concurrent_turns(1, args.sessions, args.connections, None)
            print(f"{args.sessions} concurrent tool turns, one crow serve (SQLite): " + _fmt(one))
            one_pg = await concurrent_turns(1, args.sessions, args.connections, postgres.new_database())
            print(f"{args.sessions} concurrent tool turns, one crow serve (PostgreSQL): " + _fmt(one_pg))
        if args.only in (None, "two"):
            two = await concurrent_turns(2, args.sessions, args.connections, postgres.new_database())
            print(f"{args.sessions} concurrent tool turns, two crow serve on one PostgreSQL: " + _fmt(two))


def _fmt(figures: dict[str, float]) -> str:
    return ", ".join(f"{key} {value:.1f}" for key, value in figures.items())


if __name__ == "__main__":
    asyncio.run(main())
