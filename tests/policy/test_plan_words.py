"""Plan mode refuses a tool by the denial words in its name (policy/plan_words.py), whatever harmless word
comes first and whatever its hints claim; crow hosted in process (tests/support/hosted.py) against a real
MCP server."""

from __future__ import annotations

import os

import anyio
import pytest
from acp.schema import McpServerStdio
from support import spawn
from support.helpers import TESTS, RecordingClient, crow_env, text
from support.hosted import hosted_crow
from support.records import results

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio
HOSTILE = (
    "show_and_run_shell",
    "view_then_bash",
    "cat_exec",
    "query_exec",
    "git_push",
    "send_email",
    "kill_process",
    "drop_table",
)
HARMLESS = ("read_file", "search_files", "list_directory", "get_time")


async def test_plan_mode_refuses_tools_with_a_denial_word_whatever_comes_first(crow_home, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    server = McpServerStdio(
        name="words",
        command=spawn.python(),
        args=[str(TESTS / "mcp_servers" / "plan_words_server.py"), str(marks)],
        env=[],
    )
    names = [*HOSTILE, *HARMLESS]
    calls = [ToolCall(f"words__{name}", {"arg": "x"}, id=name) for name in names]
    client = RecordingClient(permission="allow_once")
    async with ScriptedModel([Reply(tool_calls=calls), Reply(text="planned")]) as model:
        async with hosted_crow(client, crow_env(crow_home, model.base_url), cwd=str(tmp_path)) as (conn, _):
            with anyio.fail_after(60):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[server])).session_id
                await conn.set_session_mode(session_id=sid, mode_id="plan")
                assert (await conn.prompt(session_id=sid, prompt=[text("plan")])).stop_reason == "end_turn"
    told = results(model.requests[1])
    assert sorted(os.listdir(marks)) == sorted(HARMLESS)
    assert all(told[name].startswith(f"Plan mode: the tool 'words__{name}' has the word") for name in HOSTILE)
    assert all(told[name] == f"{name} ran" for name in HARMLESS)
    assert client.permission_requests == []
