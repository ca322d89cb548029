"""The `anthropic` wire end to end over ACP: Messages SSE from the scripted model, thinking signed and sent
back byte for byte, prompt caching priced at the cache rates, retries and malformed streams."""

from __future__ import annotations

import anyio
import pytest
from helpers import CORE_AGENT, RecordingClient, assert_strict_pairing, crow_env, echo_stdio, text, write_config
from hosted import hosted_crow

from crow_acp.testing import Fault, Reply, ScriptedModel, ToolCall

PROFILE = """
model = "claude"
[models.claude]
model = "claude-sonnet-test"
api = "anthropic"
reasoning = true
reasoning_effort = "high"
input_price = 3.0
output_price = 15.0
cache_write_price = 3.75
cache_read_price = 0.3
"""


def thoughts(client: RecordingClient) -> str:
    return "".join(u.content.text for u in client.of("agent_thought_chunk"))


async def one_session(home, model, client, *prompts, mcp=()):
    env = crow_env(home, model.base_url)
    async with hosted_crow(client, env, "--agent", CORE_AGENT) as (conn, _):
        sid = (await conn.new_session(cwd=str(home), mcp_servers=list(mcp))).session_id
        stops = [(await conn.prompt(session_id=sid, prompt=[text(p)])).stop_reason for p in prompts]
    return sid, stops


@pytest.mark.anyio
async def test_a_tool_turn_shows_thinking_and_sends_the_signed_thinking_back_unchanged(crow_home):
    write_config(crow_home, PROFILE)
    script = [
        Reply(reasoning="I should echo it.", text="Echoing.", tool_calls=[ToolCall("echo__echo", {"text": "hi"})]),
        Reply(reasoning="Done now.", text="It said hi."),
    ]
    client = RecordingClient()
    with ScriptedModel(script) as model, anyio.fail_after(60):
        _, stops = await one_session(crow_home, model, client, "echo hi", mcp=[echo_stdio()])
    assert stops == ["end_turn"]
    assert thoughts(client) == "I should echo it.Done now."
    assert "Echoing." in client.text() and "It said hi." in client.text()
    first, second = model.requests
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 16000}
    assistant = second["messages"][1]
    assert assistant["role"] == "assistant"
    thinking = assistant["content"][0]
    assert thinking["type"] == "thinking" and thinking["thinking"] == "I should echo it."
    assert thinking["signature"] == model.anthropic.sign("I should echo it.")
    assert [b["type"] for b in assistant["content"]] == ["thinking", "text", "tool_use"]
    result = second["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == assistant["content"][2]["id"]
    assert "hi" in result["content"]
    [update] = [u for u in client.of("usage_update")][-1:]
    assert update.cost is not None and update.cost.amount > 0
