"""Both stores keep the same text: a NUL (which PostgreSQL's text columns refuse) in a first prompt
is stored and replayed the same way on SQLite and on a real PostgreSQL, driven over ACP."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from support.helpers import RecordingClient, crow_env, text
from support.hosted import hosted_crow

from crow_acp.testing import Reply, ScriptedModel

pytestmark = pytest.mark.anyio
PROMPT = "look at\x00this\x00"


@pytest.fixture(params=["sqlite", "postgres"])
def store_env(request: Any) -> dict[str, str]:
    if request.param == "sqlite":
        return {}
    return {"CROW_DATABASE_URL": request.getfixturevalue("postgres").new_database()}


async def test_a_nul_in_the_first_prompt_is_stored_and_replayed_alike(crow_home, tmp_path, store_env):
    async with ScriptedModel(default=Reply(text="seen\x00it")) as model:
        env = crow_env(crow_home, model.base_url, **store_env)
        async with hosted_crow(RecordingClient(), env) as (conn, _):
            with anyio.fail_after(60):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                assert (await conn.prompt(session_id=sid, prompt=[text(PROMPT)])).stop_reason == "end_turn"
        replay = RecordingClient()
        async with hosted_crow(replay, env) as (conn, _):
            with anyio.fail_after(60):
                [listed] = (await conn.list_sessions(cwd=str(tmp_path))).sessions
                await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
    assert listed.title == "look at\ufffdthis\ufffd"  # a title is plain text: NUL becomes U+FFFD on both stores
    users = "".join(u.content.text for u in replay.of("user_message_chunk"))
    assert users == PROMPT and replay.text() == "seen\x00it"  # messages keep it exactly
