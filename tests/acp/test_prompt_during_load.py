"""A prompt sent while its session loads waits for the load, as an editor that restores a tab and sends
at once expects, instead of failing with -32002 (unknown session)."""

from __future__ import annotations

import pytest
from support.helpers import crow_env
from support.raw_wire import raw_crow

from crow_acp.testing import Reply, ScriptedModel

pytestmark = pytest.mark.anyio


async def test_a_prompt_sent_during_the_load_waits_for_it(crow_home, tmp_path):
    async with ScriptedModel([Reply(text="first answer"), Reply(text="after the load")]) as model:
        async with raw_crow(crow_env(crow_home, model.base_url)) as crow:
            sid = await crow.new_session(str(tmp_path))
            assert (await crow.prompt(sid, "hello"))["result"]["stopReason"] == "end_turn"
            await crow.call("session/close", {"sessionId": sid})
            load = await crow.send("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
            prompt = await crow.send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]})
            answered = await crow.answer(prompt)
            assert "error" not in answered, answered
            assert answered["result"]["stopReason"] == "end_turn"
            replies = [m for m in crow.received if "method" not in m and m.get("id") in (load, prompt)]
    assert [m["id"] for m in replies] == [load, prompt] and "error" not in replies[0]
    assert model.requests[-1]["messages"][-1] == {"role": "user", "content": "go"}
