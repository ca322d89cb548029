"""session/cancel mid-stream, mid-tool, during a permission request, and between reply and tools."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest
from support.helpers import (
    CORE_AGENT,
    HOOK_AGENT,
    RecordingClient,
    assert_strict_pairing,
    crow_env,
    echo_stdio,
    text,
)
from support.hosted import hosted_crow

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio
CANCELLED = "Cancelled by the user."


async def cancel_when(conn: Any, client: RecordingClient, sid: str, ready: Any, prompt: str) -> tuple[str, float]:
    """Prompt, cancel once ready(client) holds; returns the stop reason and how long the cancel took."""
    result: dict[str, Any] = {}

    async def run() -> None:
        result["stop"] = (await conn.prompt(session_id=sid, prompt=[text(prompt)])).stop_reason
        result["at"] = time.monotonic()

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await client.wait_for(ready)
        cancelled_at = time.monotonic()
        await conn.cancel(session_id=sid)
    return result["stop"], result["at"] - cancelled_at


def tool_results(request: dict) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


async def test_cancel_mid_stream_mid_tool_and_during_permission(crow_home, tmp_path):
    long_text = "word " * 300
    slow_call = ToolCall("echo__slow", {"seconds": 30}, id="slow")
    script = [
        Reply(text=long_text, chunks=300, delay=0.03),
        Reply(tool_calls=[slow_call, ToolCall("echo__echo", {"text": "x"}, id="quick")]),
        Reply(tool_calls=[ToolCall("echo__add", {"a": 1, "b": 2}, id="asks")]),
        Reply(text="fresh start"),
    ]
    client = RecordingClient()
    client.permission_delay = 60  # the user never answers
    async with ScriptedModel(script) as model:
        env = crow_env(crow_home, model.base_url)
        async with hosted_crow(client, env, "--agent", CORE_AGENT) as (conn, _):
            with anyio.fail_after(40):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[echo_stdio()])).session_id

                stop, took = await cancel_when(
                    conn, client, sid, lambda c: len(c.of("agent_message_chunk")) >= 3, "talk"
                )
                assert stop == "cancelled" and took < 1.0, took
                shown = client.text()
                assert 3 <= len(client.of("agent_message_chunk")) < 300

                def slow_running(c: RecordingClient) -> bool:
                    quick_done = any(u.status == "completed" for u in c.tool_updates("quick"))
                    return quick_done and any(u.status == "in_progress" for u in c.tool_updates("slow"))

                stop, took = await cancel_when(conn, client, sid, slow_running, "run tools")
                assert stop == "cancelled" and took < 1.0, took
                final = client.tool_updates("slow")[-1]
                assert final.status == "failed" and final.content[0].content.text == CANCELLED

                stop, took = await cancel_when(conn, client, sid, lambda c: c.permission_requests, "add")
                assert stop == "cancelled" and took < 1.0, took
                assert client.tool_updates("asks")[-1].status == "failed"

                assert (await conn.prompt(session_id=sid, prompt=[text("again")])).stop_reason == "end_turn"

    messages = model.requests[-1]["messages"]
    assert_strict_pairing(messages)
    # what was shown of the cut reply is what the model sees of it
    assert next(m["content"] for m in messages if m["role"] == "assistant") == shown
    assert tool_results(model.requests[-1]) == {"slow": CANCELLED, "quick": "echo: x", "asks": CANCELLED}
    assert [m["content"] for m in messages if m["role"] == "user"] == ["talk", "run tools", "add", "again"]


async def test_cancel_between_the_reply_and_its_tools_keeps_the_history_valid(crow_home, tmp_path):
    script = [Reply(tool_calls=[ToolCall("some_tool", {}, id="waiting")]), Reply(text="fine")]
    client = RecordingClient()
    async with ScriptedModel(script) as model:
        env = crow_env(crow_home, model.base_url, HOOK_LOG=str(tmp_path / "hooks.jsonl"))
        async with hosted_crow(client, env, "--agent", f"{HOOK_AGENT}:build_slow_post_response") as (conn, _):
            with anyio.fail_after(20):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                # usage_update follows the recorded reply; the slow post_response callback runs next
                stop, took = await cancel_when(conn, client, sid, lambda c: c.of("usage_update"), "go")
                assert stop == "cancelled" and took < 1.0, took
                assert (await conn.prompt(session_id=sid, prompt=[text("next")])).stop_reason == "end_turn"
    assert_strict_pairing(model.requests[-1]["messages"])
    assert tool_results(model.requests[-1]) == {"waiting": CANCELLED}
