"""`$/cancel_request` over stdio: a session/load replaying a huge history is cancelled and answered with
-32800, the session is left closed (its lease given back: another process loads it, and so does a
later load here), a cancelled prompt stops as on session/cancel,
and a cancel for an unknown or finished request is ignored."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from support.helpers import crow_env
from support.raw_wire import RawCrow, raw_crow
from support.zod_check import problems, wire_messages

from crow_acp.testing import Reply, ScriptedModel

pytestmark = pytest.mark.anyio

TURNS = 400
"""Copies of the first turn: megabytes of replay, far more than the pipe holds while the test does not read."""


def grow_history(home: Path, session_id: str) -> None:
    """Repeat the session's stored turn TURNS times, straight in the store (crow is not running)."""
    with sqlite3.connect(home / "sessions.db") as db:
        rows = db.execute(
            "SELECT message, extra, active FROM messages WHERE session_id = ? ORDER BY pos", (session_id,)
        ).fetchall()
        seq, pos = db.execute("SELECT MAX(seq), MAX(pos) FROM messages WHERE session_id = ?", (session_id,)).fetchone()
        copies = []
        for n in range(TURNS * len(rows)):
            message, extra, active = rows[n % len(rows)]
            copies.append((session_id, seq + 1 + n, pos + 1 + n, message, extra, active))
        db.executemany(
            "INSERT INTO messages (session_id, seq, pos, message, extra, active) VALUES (?, ?, ?, ?, ?, ?)", copies
        )


def replayed(raw: RawCrow, since: int, until: int | None = None) -> int:
    return sum(1 for m in raw.received[since:until] if m.get("method") == "session/update")


def load_params(session_id: str, cwd: str) -> dict:
    return {"sessionId": session_id, "cwd": cwd, "mcpServers": []}


async def test_a_slow_load_is_cancelled_and_the_session_loads_afterwards(crow_home, tmp_path):
    cwd = str(tmp_path)
    async with ScriptedModel(default=Reply(text="y" * 2000)) as model:
        env = crow_env(crow_home, model.base_url)
        async with raw_crow(env) as first:
            sid = await first.new_session(cwd)
            await first.prompt(sid, "x" * 2000)
        grow_history(crow_home, sid)
        async with raw_crow(env) as raw:
            since = len(raw.received)
            load = await raw.send("session/load", load_params(sid, cwd))
            await raw.wait_for(lambda r: replayed(r, since) > 0)  # the replay is under way; crow now waits on the pipe
            await raw.notify("$/cancel_request", {"requestId": load})
            answer = await raw.answer(load)
            assert answer["error"]["code"] == -32800, answer
            cut = raw.received.index(answer)
            assert replayed(raw, since, cut) < 2 * TURNS  # it stopped part way

            async with raw_crow(env) as other:  # the lease was given back: another process may load it now
                assert "result" in await other.call("session/load", load_params(sid, cwd))

            await raw.notify("$/cancel_request", {"requestId": load})  # finished: ignored
            await raw.notify("$/cancel_request", {"requestId": 424242})  # unknown: ignored
            await raw.notify("$/cancel_request", {"requestId": [1]})  # malformed: ignored
            since = len(raw.received)
            again = await raw.call("session/load", load_params(sid, cwd))
            assert "result" in again, again
            assert replayed(raw, since) >= 2 * (TURNS + 1)  # the whole history this time
            assert (await raw.prompt(sid, "still here"))["result"]["stopReason"] == "end_turn"
            assert [m for m in raw.received if m.get("id") in (424242, [1])] == []
            assert problems(wire_messages(raw.received)) == []


async def test_a_cancelled_prompt_stops_as_on_session_cancel(crow_home, tmp_path):
    slow = Reply(text="word " * 400, chunks=400, delay=0.05)  # 20 s unless cancelled
    async with ScriptedModel([slow], default=Reply(text="next")) as model:
        async with raw_crow(crow_env(crow_home, model.base_url)) as raw:
            sid = await raw.new_session(str(tmp_path))
            prompt = await raw.send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]})
            await raw.wait_for(lambda r: any(u["sessionUpdate"] == "agent_message_chunk" for u in r.updates))
            await raw.notify("$/cancel_request", {"requestId": prompt})
            answer = await raw.answer(prompt)
            assert answer["result"]["stopReason"] == "cancelled", answer
            assert (await raw.prompt(sid, "again"))["result"]["stopReason"] == "end_turn"
            assert problems(wire_messages(raw.received)) == []
    assert json.dumps(model.requests[-1]["messages"]).count("word") > 0  # the partial reply was recorded
