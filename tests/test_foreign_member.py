"""Foreign members: another ACP agent (tests/agents/foreign_acp_agent.py, on the `acp` SDK) as a node of a graph.

In process: crow's graph with FunctionModels and a RecordingClient as the editor; the foreign member is
a real process crow starts under its guard, speaking ACP over stdio.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import multi_support
import pytest
from helpers import RecordingClient, text
from multi_support import functions, titles

from crow_acp.testing import Reply

pytestmark = pytest.mark.anyio
GRAPHS = Path(__file__).parent / "agents" / "foreign_graphs.py"


def calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def run_graph(client, factory, home, models, monkeypatch, log, **env):
    monkeypatch.setattr(multi_support, "AGENTS", GRAPHS)
    return multi_support.in_process(client, factory, home, models, monkeypatch, env={"FOREIGN_LOG": str(log), **env})


async def ask(conn, tmp_path, words, sid=None):
    with anyio.fail_after(60):
        sid = sid or (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        return sid, await conn.prompt(session_id=sid, prompt=[text(words)])


async def test_a_foreign_member_takes_the_hand_off_and_hands_its_reply_on(crow_home, tmp_path, monkeypatch):
    log = tmp_path / "member.jsonl"
    models = functions(coder=[Reply(text="please review")], reviewer=[Reply(text="LGTM")])
    client = RecordingClient()
    async with run_graph(client, "build_chain", crow_home, models, monkeypatch, log) as conn:
        _, response = await ask(conn, tmp_path, "write it")
    assert response.stop_reason == "end_turn"
    prompts = [c for c in calls(log) if c["event"] == "prompt"]
    assert [p["text"] for p in prompts] == ["please review"]
    assert [c["cwd"] for c in calls(log) if c["event"] == "new_session"] == [str(tmp_path)]
    # The member's reply reached the editor attributed, and the reviewer got it as its hand-off.
    shown = client.text()
    assert shown.index("**outsider:** ") < shown.index("ECHO: please review") < shown.index("LGTM")
    assert multi_support.last_user(models["reviewer"].requests[0]) == "ECHO: please review"
    assert ("coder → outsider", "completed") in titles(client) and ("outsider → reviewer", "completed") in titles(
        client
    )
