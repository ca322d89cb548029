"""History survives SIGKILL: session/list, session/load replay before the response, and continuing."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from support.helpers import (
    CORE_AGENT,
    RecordingClient,
    assert_strict_pairing,
    crow_env,
    echo_stdio,
    prompt_until_killed,
    run_crow,
    text,
)

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio


def texts(updates: list[Any], kind: str) -> list[str]:
    return [u.content.text for u in updates if u.session_update == kind]


async def test_sigkill_then_load_replays_and_continues(crow_home, tmp_path):
    script = [
        Reply(
            reasoning="pondering the echo",
            text="Let me check.",
            tool_calls=[ToolCall("echo__echo", {"text": "persist"}, id="e1")],
        ),
        Reply(text="It echoed."),
        Reply(text="Running the slow one.", tool_calls=[ToolCall("echo__slow", {"seconds": 60}, id="s1")]),
        Reply(text="continuing after the crash"),
    ]
    async with ScriptedModel(script) as model:
        env = crow_env(crow_home, model.base_url)
        first = RecordingClient()
        async with run_crow(first, env, "--agent", CORE_AGENT) as (conn, proc):
            with anyio.fail_after(30):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[echo_stdio()])).session_id
                assert (await conn.prompt(session_id=sid, prompt=[text("first question")])).stop_reason == "end_turn"
                running = lambda c: any(u.status == "in_progress" for u in c.tool_updates("s1"))  # noqa: E731
                await prompt_until_killed(conn, proc, first, sid, "second question", running)
        assert proc.returncode == -9
        live_ids = [u.message_id for u in first.of("agent_message_chunk")]

        second = RecordingClient()
        async with run_crow(second, env, "--agent", CORE_AGENT) as (conn, _):
            with anyio.fail_after(30):
                listed = await conn.list_sessions(cwd=str(tmp_path))
                assert [(s.session_id, s.title) for s in listed.sessions] == [(sid, "first question")]

                await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[echo_stdio()])
                replay = list(second.updates)  # what arrived before the load response

                response = await conn.prompt(session_id=sid, prompt=[text("third question")])
                assert response.stop_reason == "end_turn"

    assert texts(replay, "user_message_chunk") == ["first question", "second question"]
    assert texts(replay, "agent_thought_chunk") == ["pondering the echo"]
    assert texts(replay, "agent_message_chunk") == ["Let me check.", "It echoed.", "Running the slow one."]
    replay_ids = [u.message_id for u in replay if u.session_update == "agent_message_chunk"]
    assert replay_ids == list(dict.fromkeys(live_ids))  # the same message ids as when streamed
    tools = {u.tool_call_id: u for u in replay if u.session_update == "tool_call"}
    assert tools["e1"].status == "completed" and tools["e1"].content[0].content.text == "echo: persist"
    assert tools["e1"].title == "echo (echo)" and tools["e1"].raw_input == {"text": "persist"}
    assert tools["s1"].status == "failed" and "Interrupted" in tools["s1"].content[0].content.text
    kinds = [u.session_update for u in replay]
    assert kinds.index("agent_thought_chunk") < kinds.index("agent_message_chunk") < kinds.index("tool_call")

    # the model gets the whole conversation back, with the interrupted call answered
    messages = model.requests[-1]["messages"]
    assert_strict_pairing(messages)
    asked = ["first question", "second question", "third question"]
    assert [m["content"] for m in messages if m["role"] == "user"] == asked
    assert {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}["e1"] == "echo: persist"
