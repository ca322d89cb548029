"""The `responses` wire end to end over ACP: Responses SSE from the scripted model, reasoning summaries shown
as thoughts, encrypted reasoning sent back byte for byte, cached tokens priced, a mid-stream error."""

from __future__ import annotations

import anyio
import pytest
from support.helpers import CORE_AGENT, RecordingClient, crow_env, echo_stdio, text, write_config
from support.hosted import hosted_crow

from crow_acp.testing import Fault, Reply, ScriptedModel, ToolCall

PROFILE = """
model = "gpt"
[models.gpt]
model = "gpt-5-test"
api = "responses"
reasoning = true
reasoning_effort = "medium"
input_price = 1.25
output_price = 10.0
cache_read_price = 0.125
"""


@pytest.mark.anyio
async def test_a_tool_turn_carries_the_encrypted_reasoning_to_the_next_call_unchanged(crow_home):
    write_config(crow_home, PROFILE)
    script = [
        Reply(reasoning="Echo first.", text="Echoing.", tool_calls=[ToolCall("echo__echo", {"text": "hi"})]),
        Reply(reasoning="It worked.", text="It said hi."),
    ]
    client = RecordingClient()
    with ScriptedModel(script) as model, anyio.fail_after(180):
        async with hosted_crow(client, crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as (conn, _):
            sid = (await conn.new_session(cwd=str(crow_home), mcp_servers=[echo_stdio()])).session_id
            assert (await conn.prompt(session_id=sid, prompt=[text("echo hi")])).stop_reason == "end_turn"
    assert "".join(u.content.text for u in client.of("agent_thought_chunk")) == "Echo first.It worked."
    first, second = model.requests
    assert (first["store"], first["include"], first["reasoning"]["effort"]) == (
        False,
        ["reasoning.encrypted_content"],
        "medium",
    )
    kinds = [item["type"] for item in second["input"]]
    assert kinds == ["message", "reasoning", "message", "function_call", "function_call_output"]
    reasoning = second["input"][1]
    assert reasoning["encrypted_content"] == model.responses.seal(reasoning["id"], "Echo first.")
    call, output = second["input"][3], second["input"][4]
    assert call["call_id"] == output["call_id"] and "hi" in output["output"]
    costs = [u.cost.amount for u in client.of("usage_update") if u.cost is not None]
    assert len(costs) == 2 and costs[1] > costs[0] > 0


def test_the_scripted_api_refuses_an_output_without_its_call_and_altered_reasoning():
    import httpx

    with ScriptedModel(default=Reply(text="ok")) as model:
        url = model.base_url + "/responses"
        lone = {"model": "m", "input": [{"type": "function_call_output", "call_id": "c1", "output": "x"}]}
        answer = httpx.post(url, json=lone)
        assert answer.status_code == 400 and "No tool call found" in answer.json()["error"]["message"]
        forged = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc:forged"}
        answer = httpx.post(url, json={"model": "m", "input": [forged]})
        assert answer.status_code == 400 and "could not be verified" in answer.json()["error"]["message"]


@pytest.mark.anyio
async def test_an_error_event_mid_stream_fails_the_turn_and_the_next_one_works(crow_home):
    write_config(crow_home, PROFILE)
    broken = Fault(500, "the model broke", cut_after=6, reply=Reply(text="partial answer here"), event="error")
    client = RecordingClient()
    with ScriptedModel([broken, Reply(text="fine")]) as model, anyio.fail_after(180):
        async with hosted_crow(client, crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as (conn, _):
            sid = (await conn.new_session(cwd=str(crow_home), mcp_servers=[])).session_id
            with pytest.raises(Exception) as failed:
                await conn.prompt(session_id=sid, prompt=[text("one")])
            assert "the model broke" in str(failed.value)
            assert (await conn.prompt(session_id=sid, prompt=[text("two")])).stop_reason == "end_turn"
    assert len(model.requests) == 2
