"""The default agent's plan tool over ACP: plan updates, never a permission prompt, replayed on load."""

from __future__ import annotations

import anyio
import pytest
from support.helpers import RecordingClient, crow_env, text, tool_names
from support.hosted import hosted_crow

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio

FIRST = {
    "entries": [
        {"content": "Read the code", "status": "in_progress", "priority": "high"},
        {"content": "Write the fix", "status": "pending"},
    ]
}
SECOND = {
    "entries": [
        {"content": "Read the code", "status": "completed", "priority": "high"},
        {"content": "Write the fix", "status": "in_progress"},
    ]
}


def plans(client: RecordingClient) -> list[list[tuple[str, str, str]]]:
    return [[(e.content, e.status, e.priority) for e in u.entries] for u in client.of("plan")]


async def test_the_plan_tool_drives_the_plan_panel_and_survives_load(crow_home, tmp_path):
    script = [
        Reply(tool_calls=[ToolCall("write_plan", FIRST, id="p1")]),
        Reply(tool_calls=[ToolCall("write_plan", SECOND, id="p2"), ToolCall("write_plan", {"entries": "x"}, id="bad")]),
        Reply(text="planned"),
    ]
    client = RecordingClient(permission="reject_once")  # were it asked, it would be refused
    async with ScriptedModel(script) as model:
        env = crow_env(crow_home, model.base_url)
        with anyio.fail_after(60):
            async with hosted_crow(client, env) as (conn, _):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                await conn.prompt(session_id=sid, prompt=[text("fix the bug")])
            replay = RecordingClient()
            async with hosted_crow(replay, env) as (conn, _):
                await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
    assert "write_plan" in tool_names(model.requests[0])
    assert client.permission_requests == []
    live = plans(client)
    assert live == [
        [("Read the code", "in_progress", "high"), ("Write the fix", "pending", "medium")],
        [("Read the code", "completed", "high"), ("Write the fix", "in_progress", "medium")],
    ]
    assert client.tool_updates("bad")[-1].status == "failed"
    results = {m["tool_call_id"]: m["content"] for m in model.requests[2]["messages"] if m["role"] == "tool"}
    assert results["p2"] == "Plan updated: 2 steps, 1 completed."
    assert results["bad"].startswith("Plan not updated: `entries` must be a list")
    assert plans(replay) == live  # the panel is rebuilt on load, and the last plan is the one shown
