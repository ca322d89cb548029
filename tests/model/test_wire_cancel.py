"""Cancel in the middle of a stream on the anthropic and responses wires: the turn ends cancelled, what was
shown is kept, and the next request is one the provider's (scripted) API accepts."""

from __future__ import annotations

import anyio
import pytest
from support.helpers import CORE_AGENT, RecordingClient, crow_env, text, write_config
from support.hosted import hosted_crow

from crow_acp.testing import Reply, ScriptedModel

PROFILE = """
model = "m"
[models.m]
model = "{model}"
api = "{api}"
reasoning = true
reasoning_effort = "high"
"""


@pytest.mark.anyio
@pytest.mark.parametrize(("api", "model_id"), [("anthropic", "claude-test"), ("responses", "gpt-5-test")])
async def test_cancel_mid_stream_keeps_the_history_valid(crow_home, api, model_id):
    write_config(crow_home, PROFILE.format(api=api, model=model_id))
    held = Reply(reasoning="thinking hard", text="the first words and then a lot more", hold_after=9)
    client = RecordingClient()
    with ScriptedModel([held, Reply(text="second answer")]) as model, anyio.fail_after(180):
        async with hosted_crow(client, crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as (conn, _):
            sid = (await conn.new_session(cwd=str(crow_home), mcp_servers=[])).session_id
            async with anyio.create_task_group() as group:
                stops: list[str] = []

                async def ask() -> None:
                    stops.append((await conn.prompt(session_id=sid, prompt=[text("first")])).stop_reason)

                group.start_soon(ask)
                # Until the reasoning's first word has been shown whole (it streams in pieces: a cancel after
                # the first piece alone would leave "thin"), and the stream is held (hold_after) after it.
                await client.wait_for(thought_shown, timeout=120)  # a hang guard: the first stream imports the SDK
                await conn.cancel(session_id=sid)
            assert stops == ["cancelled"]
            assert (await conn.prompt(session_id=sid, prompt=[text("second")])).stop_reason == "end_turn"
    assert thought_shown(client)
    assert "second answer" in client.text()
    assert len(model.requests) == 2  # the second was accepted by the scripted API's checks


def thought_shown(client: RecordingClient) -> bool:
    return "thinking" in "".join(u.content.text for u in client.of("agent_thought_chunk"))
