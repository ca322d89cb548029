"""One session across the three wires: chat -> responses -> anthropic, three times, then reloaded. Each wire's
scripted API refuses what the real one would, so every prompt ending well means every request was valid; and
no wire sees another's attachments."""

from __future__ import annotations

import json

import anyio
import pytest
from support.helpers import CORE_AGENT, RecordingClient, crow_env, echo_stdio, text, write_config
from support.hosted import hosted_crow

from crow_acp.history import ATTACHMENTS
from crow_acp.testing import Reply, ScriptedModel, ToolCall

PROFILES = """
model = "chat"
[models.chat]
model = "chat-model"
api = "chat"
[models.responses]
model = "gpt-5-test"
api = "responses"
reasoning = true
reasoning_effort = "low"
[models.anthropic]
model = "claude-test"
api = "anthropic"
reasoning = true
reasoning_effort = "low"
"""


def turn(n: int) -> list[Reply]:
    call = ToolCall("echo__echo", {"text": f"t{n}"})
    return [
        Reply(reasoning=f"think {n}", text=f"calling {n}", tool_calls=[call]),
        Reply(reasoning="ok", text=f"done {n}"),
    ]


def wire_of(req: dict) -> str:
    return "anthropic" if "max_tokens" in req and "messages" in req else "responses" if "input" in req else "chat"


@pytest.mark.anyio
async def test_switching_wires_three_times_and_reloading_keeps_every_request_valid(crow_home):
    write_config(crow_home, PROFILES)
    order = ["chat", "responses", "anthropic"] * 3
    script = [reply for n in range(len(order) + 1) for reply in turn(n)]
    with ScriptedModel(script) as model, anyio.fail_after(240):
        env = crow_env(crow_home, model.base_url)
        async with hosted_crow(RecordingClient(), env, "--agent", CORE_AGENT) as (conn, _):
            sid = (await conn.new_session(cwd=str(crow_home), mcp_servers=[echo_stdio()])).session_id
            for n, wire in enumerate(order):
                await conn.set_config_option(config_id="model", session_id=sid, value=wire)
                assert (await conn.prompt(session_id=sid, prompt=[text(f"prompt {n}")])).stop_reason == "end_turn"
        client = RecordingClient()
        async with hosted_crow(client, env, "--agent", CORE_AGENT) as (conn, _):
            await conn.load_session(cwd=str(crow_home), session_id=sid, mcp_servers=[echo_stdio()])
            assert (await conn.prompt(session_id=sid, prompt=[text("after load")])).stop_reason == "end_turn"
    wires = [wire_of(req) for req in model.requests]
    assert wires == [w for w in order for _ in range(2)] + ["anthropic"] * 2
    for req in model.requests:
        raw = json.dumps(req)
        assert ATTACHMENTS not in raw
        if wire_of(req) != "anthropic":
            assert '"thinking"' not in raw and '"signature"' not in raw
        if wire_of(req) != "responses":
            assert "encrypted_content" not in raw
    last = model.requests[-1]
    # The reload kept the stored thinking: the last anthropic turns' signed blocks went back.
    signed = [b for m in last["messages"] if m["role"] == "assistant" for b in m["content"] if b["type"] == "thinking"]
    assert len(signed) >= 4
    assert all(b["signature"] == model.anthropic.sign(b["thinking"]) for b in signed)
    replayed = [u for u in client.of("agent_message_chunk")]
    assert any("done 8" in u.content.text for u in replayed)
