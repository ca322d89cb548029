"""An MCP server whose tools, prompts and resources lists never end: crow reads a bounded number of
pages of each, the server starts, and its tools work (over ACP, crow hosted in process)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import anyio
import pytest
from acp.schema import McpServerStdio
from support.helpers import CORE_AGENT, RecordingClient, crow_env, text
from support.hosted import hosted_crow

from crow_acp.mcp.lists import MAX_PAGES
from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio
ENDLESS = Path(__file__).resolve().parents[1] / "mcp_servers" / "endless_lists_server.py"


async def test_endless_lists_are_read_a_bounded_number_of_pages(crow_home, tmp_path):
    lists = tmp_path / "lists"
    server = McpServerStdio(name="endless", command=sys.executable, args=[str(ENDLESS), "--lists", str(lists)], env=[])
    script = [Reply(tool_calls=[ToolCall("endless__ping", {}, id="p")]), Reply(text="done")]
    client = RecordingClient()
    async with ScriptedModel(script) as model:
        async with hosted_crow(client, crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as (conn, _):
            with anyio.fail_after(60):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[server])).session_id
                assert (await conn.prompt(session_id=sid, prompt=[text("ping it")])).stop_reason == "end_turn"
    results = {m["tool_call_id"]: m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool"}
    assert "pong" in results["p"]
    pages = Counter(lists.read_text().split())
    assert set(pages) == {"tools/list", "prompts/list", "resources/list"}
    assert all(count <= MAX_PAGES for count in pages.values()), pages
