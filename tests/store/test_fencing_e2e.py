"""Fencing end to end: `crow acp` A is SIGSTOPped mid-turn, B takes the session over, A wakes up.

A is alive but stopped (same host, same pid), so only the lease's expiry frees the session. After
SIGCONT, A's turn must end with a clear error, A must write nothing more, and a third process must
load a history that is B's continuation of what A wrote before it stalled. Once per backend.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import RequestError
from acp.schema import McpServerStdio
from support import spawn
from support.helpers import (
    CORE_AGENT,
    TESTS,
    RecordingClient,
    assert_strict_pairing,
    crow_env,
    run_crow,
    text,
    write_config,
)

from crow_acp.acp.sessions.leases import SESSION_BUSY
from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio

GATE_SERVER = TESTS / "mcp_servers" / "gate_server.py"
TAKEN_OVER = "now owned by another crow process"


class Sessions:
    """The test's own view of the session database, read without crow."""

    def __init__(self, home: Path, url: str | None) -> None:
        self.home, self.url = home, url

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self.url:
            import psycopg

            with psycopg.connect(self.url, autocommit=True) as conn:
                cursor = conn.execute(sql.replace("?", "%s"), args)
                return cursor.fetchall() if cursor.description else []
        with sqlite3.connect(self.home / "sessions.db") as db:
            return db.execute(sql, args).fetchall()

    def lease(self, session_id: str) -> tuple[int, float] | None:
        rows = self.query("SELECT pid, expires_at FROM leases WHERE session_id = ?", (session_id,))
        return (int(rows[0][0]), float(rows[0][1])) if rows else None

    def writer_mid_transaction(self) -> bool:
        """Whether a connection is inside a transaction now (a stopped one would block every writer)."""
        if self.url:
            busy = (
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
                "AND backend_type = 'client backend' AND xact_start IS NOT NULL"
            )
            return self.query(busy)[0][0] > 0
        db = sqlite3.connect(self.home / "sessions.db", timeout=0)
        try:
            db.execute("BEGIN IMMEDIATE")
            db.execute("ROLLBACK")
            return False
        except sqlite3.OperationalError:
            return True
        finally:
            db.close()

    def messages(self, session_id: str) -> list[tuple[dict[str, Any], bool]]:
        rows = self.query("SELECT message, active FROM messages WHERE session_id = ? ORDER BY pos, seq", (session_id,))
        return [(json.loads(message), bool(active)) for message, active in rows]


@pytest.fixture
def sessions(request, crow_home) -> Sessions:
    url = request.getfixturevalue("postgres").new_database() if request.param == "postgres" else None
    return Sessions(crow_home, url)


def respond(gate: Path) -> Any:
    """The model: A's prompt gets a call of the gate tool; anything after a tool result is A's late answer."""

    def reply(request: dict[str, Any]) -> Reply:
        last = request["messages"][-1]
        if last["role"] == "tool":
            return Reply(text="a's late answer")
        said = json.dumps(last.get("content"))
        if "open the gate" in said:
            return Reply(
                text="Waiting at the gate.", tool_calls=[ToolCall("gate__wait_for", {"path": str(gate)}, id="g1")]
            )
        return Reply(text=f"answered {said}")

    return reply


async def stop(pid: int, sessions: Sessions) -> None:
    """SIGSTOP the process, but not inside a database transaction: a real stall there blocks B's takeover
    until A wakes (SQLite's write lock, PostgreSQL's row lock), which is correct but not this test."""
    while True:
        os.kill(pid, signal.SIGSTOP)
        if not sessions.writer_mid_transaction():
            return
        os.kill(pid, signal.SIGCONT)
        await anyio.sleep(0.01)


async def until_expired(sessions: Sessions, session_id: str, pid: int, path: str) -> None:
    """Wait (polling the store) until the stopped owner's lease has run out; on the "write" path, where
    A's lease lasts an hour so that its first act on waking is a write, not a renewal, expire it now."""
    if path == "write":
        sessions.query("UPDATE leases SET expires_at = 0 WHERE session_id = ?", (session_id,))
    while (lease := sessions.lease(session_id)) is None or lease[0] != pid or lease[1] >= time.time():  # noqa: ASYNC110 (another process's database: no event to wait on)
        await anyio.sleep(0.05)


@asynccontextmanager
async def crow(client: Any, env: dict[str, str]) -> AsyncIterator[tuple[Any, Any]]:
    async with run_crow(client, env, "--agent", CORE_AGENT) as (conn, proc):
        yield conn, proc


@pytest.mark.parametrize(
    ("sessions", "path"), [("sqlite", "renewal"), ("sqlite", "write"), ("postgres", "write")], indirect=["sessions"]
)
async def test_a_stalled_owner_taken_over_mid_turn_writes_nothing_more(sessions, path, crow_home, tmp_path):
    """On waking, A's renewal notices the takeover while its tool still runs ("renewal": its lease ran out
    naturally), or A's tool result is the first thing it does and the store's fence refuses it ("write":
    its lease lasts an hour, so no renewal is due, and the test expires it)."""
    write_config(crow_home, f"[store]\nlease_ttl = {1 if path == 'renewal' else 3600}\n")
    gate = tmp_path / "gate"
    cwd = str(tmp_path)
    gate_server = McpServerStdio(name="gate", command=spawn.python(), args=[str(GATE_SERVER)], env=[])
    async with ScriptedModel(default=respond(gate)) as model:
        env = crow_env(crow_home, model.base_url, **({"CROW_DATABASE_URL": sessions.url} if sessions.url else {}))
        first, second = RecordingClient(), RecordingClient()
        outcome: dict[str, Any] = {}
        with anyio.fail_after(120):
            async with crow(first, env) as (a, a_proc), crow(second, env) as (b, b_proc):
                sid = (await a.new_session(cwd=cwd, mcp_servers=[gate_server])).session_id

                async def a_turn() -> None:
                    try:
                        outcome["stop"] = (await a.prompt(session_id=sid, prompt=[text("open the gate")])).stop_reason
                    except RequestError as error:
                        outcome["error"] = error

                async with anyio.create_task_group() as group:
                    group.start_soon(a_turn)
                    await first.wait_for(lambda c: any(u.status == "in_progress" for u in c.tool_updates("g1")), 60)
                    await stop(a_proc.pid, sessions)
                    try:
                        await until_expired(sessions, sid, a_proc.pid, path)
                        await b.load_session(cwd=cwd, session_id=sid, mcp_servers=[])
                        assert (await b.prompt(session_id=sid, prompt=[text("b goes on")])).stop_reason == "end_turn"
                        if path == "write":
                            gate.touch()  # A's tool answers the moment A runs again: its first act is a write
                        shown = len(first.updates)
                    finally:
                        os.kill(a_proc.pid, signal.SIGCONT)  # "renewal": the tool still waits; A's renewal is due
                gate.touch()
                assert "stop" not in outcome, "A's turn must not end as if nothing happened"
                error = outcome["error"]
                assert (
                    error.code == SESSION_BUSY and TAKEN_OVER in str(error) and "Load the session again" in str(error)
                )
                # The fence names the new owner; renewal only learns that the lease is gone.
                assert error.data["takenOver"] is True and error.data["pid"] == (b_proc.pid if path == "write" else 0)
                assert not [u for u in first.updates[shown:] if u.session_update == "agent_message_chunk"]
                with pytest.raises(RequestError) as later:
                    await a.prompt(session_id=sid, prompt=[text("a tries again")])
                assert later.value.code == SESSION_BUSY and TAKEN_OVER in str(later.value)
                assert sessions.lease(sid)[0] == b_proc.pid, "A gave back nothing of B's"
                await b.close_session(session_id=sid)  # B is done: A loads it again, as the error says, and goes on
                await a.load_session(cwd=cwd, session_id=sid, mcp_servers=[])
                assert (await a.prompt(session_id=sid, prompt=[text("a is back")])).stop_reason == "end_turn"
        # Third: a fresh process loads what is stored and continues it.
        third = RecordingClient()
        async with crow(third, env) as (c, _):
            with anyio.fail_after(60):
                await c.load_session(cwd=cwd, session_id=sid, mcp_servers=[])
                assert (await c.prompt(session_id=sid, prompt=[text("c checks")])).stop_reason == "end_turn"
        assert [u.content.text for u in third.of("user_message_chunk")] == ["open the gate", "b goes on", "a is back"]
        assert_strict_pairing(model.requests[-1]["messages"])
    stored = [message for message, active in sessions.messages(sid) if active]
    assert_strict_pairing(stored)
    said = [(m["role"], m.get("content")) for m in stored]
    assert said[:3] == [("user", "open the gate"), ("assistant", "Waiting at the gate."), ("tool", said[2][1])]
    assert "gate" not in str(said[2][1]).lower() or "opened" not in str(said[2][1]), (
        "A's late tool result was not stored"
    )
    assert said[3:] == [
        ("user", "b goes on"),
        ("assistant", 'answered "b goes on"'),
        ("user", "a is back"),
        ("assistant", 'answered "a is back"'),
        ("user", "c checks"),
        ("assistant", 'answered "c checks"'),
    ]
    assert "a's late answer" not in json.dumps(sessions.messages(sid))
    log = (crow_home / "logs" / "crow.log").read_text()
    assert log.count(TAKEN_OVER) == 1, "logged once, by A"
    assert "Traceback" not in log
