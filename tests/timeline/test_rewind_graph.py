"""A multi-agent session refuses /rewind with its reason, and changes nothing (issue 31 item 2)."""

from __future__ import annotations

import anyio
import pytest
from support.helpers import RecordingClient, text
from support.multi_support import functions, in_process

from crow_acp.testing import Reply, ToolCall


def chain_scripts() -> dict[str, list]:
    """coder -> reviewer -> tester, as tests/multi/test_multi_agent.py scripts them."""
    return {
        "coder": [
            Reply(text="Let me look.", tool_calls=[ToolCall("lookup", {"key": "k1"}, id="call_1")]),
            Reply(text="CODE-DONE: wrote add()"),
        ],
        "reviewer": [
            Reply(text="Reading notes.", tool_calls=[ToolCall("read_file", {"path": "notes.txt"}, id="call_1")]),
            Reply(text="REVIEW: add() is fine"),
        ],
        "tester": [Reply(text="TESTS: pass")],
    }


pytestmark = pytest.mark.anyio


async def test_a_graph_refuses_to_rewind_and_keeps_its_history(crow_home, tmp_path, monkeypatch):
    client = RecordingClient()
    (tmp_path / "notes.txt").write_text("notes\n")
    models = functions(**chain_scripts())
    async with in_process(client, "build", crow_home, models, monkeypatch) as conn:
        with anyio.fail_after(60):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[text("write add")])
            asked = {name: len(model.requests) for name, model in models.items()}
            since = len(client.updates)
            response = await conn.prompt(session_id=sid, prompt=[text("/rewind 1")])
    assert response.stop_reason == "end_turn"
    said = "".join(u.content.text for u in client.updates[since:] if u.session_update == "agent_message_chunk")
    assert "Rewind is not available in a multi-agent session" in said
    assert {name: len(model.requests) for name, model in models.items()} == asked  # no member ran a turn
    assert (tmp_path / "notes.txt").read_text() == "notes\n"
