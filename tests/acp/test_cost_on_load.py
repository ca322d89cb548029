"""After session/load the editor shows the session's cost again (a usage_update), over stdio and crow serve."""

from __future__ import annotations

import json
import sqlite3

import anyio
import pytest
from support.helpers import CORE_AGENT, RecordingClient, crow_env, run_crow, text, write_config
from support.serve_support import crow_serve, over_http

from crow_acp.testing import Reply, ScriptedModel

pytestmark = pytest.mark.anyio

PRICED = """
model = "priced"
[models.priced]
model = "priced-id"
context_window = 64000
input_price = 2.0
output_price = 8.0
currency = "EUR"
"""
USAGE = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}


def after_replay(client: RecordingClient) -> list[str]:
    kinds = client.kinds()
    return kinds[max(i for i, kind in enumerate(kinds) if kind == "agent_message_chunk") + 1 :]


async def charged_session(env: dict[str, str], cwd: str) -> str:
    async with run_crow(RecordingClient(), env, "--agent", CORE_AGENT) as (conn, _):
        sid = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id
        for words in ("one", "two"):
            assert (await conn.prompt(session_id=sid, prompt=[text(words)])).stop_reason == "end_turn"
    return sid


async def test_a_loaded_session_shows_its_cost_again_over_stdio_and_serve(crow_home, tmp_path):
    write_config(crow_home, PRICED)
    async with ScriptedModel([Reply(text="a", usage=USAGE), Reply(text="b", usage=USAGE)]) as model:
        env = crow_env(crow_home, model.base_url)
        with anyio.fail_after(90):
            sid = await charged_session(env, str(tmp_path))
            stdio = RecordingClient()
            async with run_crow(stdio, env, "--agent", CORE_AGENT) as (conn, _):
                await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                await stdio.wait_for(lambda c: c.of("usage_update"))
            served = RecordingClient()
            async with crow_serve(env, "--agent", CORE_AGENT) as server, over_http(served, server) as conn:
                await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                await served.wait_for(lambda c: c.of("usage_update"))
    for client in (stdio, served):
        [usage] = client.of("usage_update")
        # Two calls of (1000 * 2.0 + 500 * 8.0) per million: 0.012 EUR, as the editor showed before.
        assert (usage.used, usage.size, usage.cost.amount, usage.cost.currency) == (
            1500,
            64000,
            pytest.approx(0.012),
            "EUR",
        )
        assert "usage_update" in after_replay(client), "after the replay, not inside it"


@pytest.mark.parametrize(
    "damage", [None, "not a dict", {"EUR": "lots"}, {"EUR": float("nan")}], ids=["unpriced", "str", "amount", "nan"]
)
async def test_no_cost_shown_for_an_unpriced_or_damaged_session(crow_home, tmp_path, damage):
    write_config(crow_home, PRICED if damage else 'model = "plain"\n[models.plain]\nmodel = "plain-id"\n')
    async with ScriptedModel([Reply(text="a", usage=USAGE), Reply(text="b", usage=USAGE)]) as model:
        env = crow_env(crow_home, model.base_url)
        with anyio.fail_after(90):
            sid = await charged_session(env, str(tmp_path))
            if damage is not None:
                db = sqlite3.connect(crow_home / "sessions.db")
                (data,) = db.execute("SELECT data FROM sessions WHERE id = ?", (sid,)).fetchone()
                db.execute(
                    "UPDATE sessions SET data = ? WHERE id = ?", (json.dumps({**json.loads(data), "cost": damage}), sid)
                )
                db.commit()
                db.close()
            client = RecordingClient()
            async with run_crow(client, env, "--agent", CORE_AGENT) as (conn, _):
                await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                await client.wait_for(lambda c: c.of("available_commands_update"))  # sent after the usage would be
    assert client.of("usage_update") == []
    assert client.text() == "ab"
