"""A prompt sent the moment session/new is answered works: crow imports openai in the background
from then on, and the first prompt used to import it on the event loop at the same time. Two
threads importing one package at once can meet in importlib's deadlock detection, and the prompt
failed with "cannot import name ... from partially initialized module 'openai.types.chat'"
(rarely: seen once in nine fresh processes under load). The prompt now waits for the background import."""

from __future__ import annotations

import pytest
from support.helpers import RecordingClient, crow_env, run_crow, text

from crow_acp.testing import Reply, ScriptedModel

pytestmark = pytest.mark.anyio


async def test_a_prompt_right_after_session_new_is_answered(crow_home, tmp_path):
    with ScriptedModel(default=Reply(text="hello there")) as model:
        for _ in range(2):  # fresh processes: the race is in each one's first prompt
            client = RecordingClient()
            async with run_crow(client, crow_env(crow_home, model.base_url), cwd=str(tmp_path)) as (conn, _):
                session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
                response = await conn.prompt(session_id=session.session_id, prompt=[text("hi")])
                assert response.stop_reason == "end_turn"
                assert client.text() == "hello there"
