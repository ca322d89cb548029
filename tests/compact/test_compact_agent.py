"""Compaction end to end, in process: the default agent, a FunctionModel, a new agent on the same store.

The scripted model reports the prompt tokens each prompt asks for ("[p=700]"), so the test
decides exactly when the session crosses the threshold (300, from config.toml).
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from support.compact_brain import Brain, activity, turn
from support.helpers import RecordingClient, assert_strict_pairing, text
from support.inproc import crow

from crow_acp.core.session import SUMMARY_ACK, SUMMARY_PREFIX
from crow_acp.testing.function_model import FunctionModel
from crow_compact.summary import SYSTEM


@pytest.fixture
def home(crow_home):
    (crow_home / "config.toml").write_text("[compaction]\nthreshold = 300\nkeep_last = 2\n")
    return crow_home


def joined(request: dict) -> str:
    return json.dumps(request["messages"])


def content_text(update: Any) -> str:
    return " ".join(c.content.text for c in update.content or [])


@pytest.mark.anyio
async def test_a_long_session_compacts_and_a_restart_replays_the_marker(home, tmp_path, monkeypatch):
    brain = Brain()
    model = FunctionModel(default=brain)
    client = RecordingClient()
    async with crow(home, model, monkeypatch, client) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=turn("one", 100, filler=True))
        await conn.prompt(session_id=sid, prompt=turn("two", 200, filler=True))
        assert (await conn.prompt(session_id=sid, prompt=turn("three", 420))).stop_reason == "end_turn"

        # The summary request: a side call with the hand-off prompt over the older turns only.
        assert len(brain.summaries) == 1
        summary_request = brain.summaries[0]
        assert "tools" not in summary_request and not summary_request.get("stream")
        assert [m["role"] for m in summary_request["messages"]] == ["system", "user"]
        assert summary_request["messages"][0]["content"] == SYSTEM
        request_text = summary_request["messages"][1]["content"]
        for needle in ("turn one", "ack one", "turn two", "ack two", "## Next steps", "## Exact references"):
            assert needle in request_text, needle
        assert "turn three" not in request_text, "the current turn is kept verbatim, not summarised"

        # The editor saw it: in_progress, then completed with the counts, then a usage_update.
        shown = activity(client, "Compacting context")
        assert [u.status for u in shown] == ["in_progress", "completed"]
        assert shown[0].tool_call_id == shown[1].tool_call_id
        counts = re.search(r"([\d,]+) → ([\d,]+) tokens", content_text(shown[1]))
        before, after = (int(group.replace(",", "")) for group in counts.groups())
        assert before > 300 and after < before
        position = client.updates.index(shown[1])
        assert client.updates[position + 1].session_update == "usage_update"
        assert client.updates[position + 1].used == after

        # The next model request carries the summary, then the kept tail verbatim, then the new turn.
        await conn.prompt(session_id=sid, prompt=turn("four", 100))
        messages = brain.turns[-1]["messages"]
        assert messages[0] == brain.turns[0]["messages"][0], "the system prompt survives compaction"
        contents = [m.get("content") or "" for m in messages]
        summary_at = next(i for i, c in enumerate(contents) if c.startswith(SUMMARY_PREFIX))
        assert "SUMMARY-1" in contents[summary_at]
        assert contents[summary_at + 1] == SUMMARY_ACK, "an assistant turn keeps user/assistant alternation"
        assert [c.split(" [")[0] for c in contents[summary_at + 2 :]] == ["turn three", "ack three", "turn four"]
        assert "turn one" not in joined(brain.turns[-1])

        # /compact with a focus compacts now and keeps only the latest turn.
        offered = [c.name for u in client.of("available_commands_update") for c in u.available_commands]
        assert "compact" in offered
        response = await conn.prompt(session_id=sid, prompt=[text("/compact keep the pear counts")])
        assert response.stop_reason == "end_turn"
        assert "Context compacted" in client.text()
        assert len(brain.summaries) == 2
        focus_request = brain.summaries[1]["messages"][1]["content"]
        assert "keep the pear counts" in focus_request and "SUMMARY-1" in focus_request

    # After a restart, session/load replays what the user saw, with a marker per compaction.
    reloaded = RecordingClient()
    async with crow(home, model, monkeypatch, reloaded) as conn:
        await conn.load_session(session_id=sid, cwd=str(tmp_path), mcp_servers=[])
        markers = activity(reloaded, "Context compacted")
        assert len(markers) == 2
        said = [u.content.text for u in reloaded.of("user_message_chunk")]
        assert [s.split(" [")[0] for s in said] == ["turn one", "turn two", "turn three", "turn four"]
        # ...while the model continues from the compacted history.
        await conn.prompt(session_id=sid, prompt=turn("five", 100))
        request = joined(brain.turns[-1])
        assert "SUMMARY-2" in request and "turn four" in request
        assert "turn one" not in request and "turn three" not in request
    for sent in brain.turns:
        assert_strict_pairing(sent["messages"])


@pytest.mark.anyio
async def test_a_failing_summary_leaves_the_session_usable_and_never_loops(home, tmp_path, monkeypatch):
    brain = Brain()
    brain.fail_summary = True
    model = FunctionModel(default=brain)
    client = RecordingClient()
    async with crow(home, model, monkeypatch, client) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        for name, tokens in (("one", 100), ("two", 150)):
            await conn.prompt(session_id=sid, prompt=turn(name, tokens, filler=True))
        brain.call_tool_once = True  # over the threshold at three checks of the same turn
        calls = len(brain.turns)
        response = await conn.prompt(session_id=sid, prompt=turn("three", 700))
        assert response.stop_reason == "end_turn"
        assert len(brain.turns) - calls == 2, "a tool step, then the answer"
        assert len(brain.summaries) == 1, "one attempt per turn, however many checks are over"
        shown = activity(client, "Compacting context")
        assert [u.status for u in shown] == ["in_progress", "failed"]
        assert "Compaction failed" in content_text(shown[1]) and "refused" in content_text(shown[1])

        # The next turn works on the unchanged history (and may try once more, as each turn may).
        brain.call_tool_once = False
        response = await conn.prompt(session_id=sid, prompt=turn("four", 100))
        assert response.stop_reason == "end_turn"
        assert len(brain.summaries) == 2
        assert "turn one" in joined(brain.turns[-1]) and SUMMARY_PREFIX not in joined(brain.turns[-1])

        await conn.prompt(session_id=sid, prompt=[text("/compact")])
        assert "Compaction failed" in client.text()
        brain.fail_summary = False
        await conn.prompt(session_id=sid, prompt=[text("/compact")])
        assert "Context compacted" in client.text()
        await conn.prompt(session_id=sid, prompt=turn("five", 100))
        assert "turn one" not in joined(brain.turns[-1]) and "SUMMARY-4" in joined(brain.turns[-1])
    for sent in brain.turns:
        assert_strict_pairing(sent["messages"])


@pytest.mark.anyio
async def test_cancelling_during_the_summary_leaves_the_history_unchanged(home, tmp_path, monkeypatch):
    brain = Brain()
    brain.summary_delay = 30
    model = FunctionModel(default=brain)
    client = RecordingClient()
    async with crow(home, model, monkeypatch, client) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=turn("one", 100, filler=True))
        await conn.prompt(session_id=sid, prompt=turn("two", 200, filler=True))
        prompt = asyncio.create_task(conn.prompt(session_id=sid, prompt=turn("three", 420)))
        await client.wait_for(lambda c: activity(c, "Compacting context"))
        await conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(prompt, 10)).stop_reason == "cancelled"
        shown = activity(client, "Compacting context")
        assert [u.status for u in shown] == ["in_progress", "failed"]
        assert "Cancelled" in content_text(shown[1])
        # The history is as before: the next turn (still over the threshold) summarises the same turns.
        brain.summary_delay = 0
        assert (await conn.prompt(session_id=sid, prompt=turn("four", 100))).stop_reason == "end_turn"
        assert len(brain.summaries) == 2
        assert brain.summaries[1]["messages"][1]["content"] == brain.summaries[0]["messages"][1]["content"]
        assert "SUMMARY-2" in joined(brain.turns[-1]) and "SUMMARY-1" not in joined(brain.turns[-1])


AGENT_FILE = """
from crow.presets import default_agent


def make():
    agent = default_agent()

    async def compact_when_asked(session, **kwargs):
        if "#compact" in session.get_messages()[-2]["content"]:
            session.trigger_compaction("the fruit totals")

    agent.callbacks.end_turn.append(compact_when_asked)
    return agent
"""


@pytest.mark.anyio
async def test_trigger_compaction_from_a_callback_compacts_before_the_next_model_call(home, tmp_path, monkeypatch):
    (tmp_path / "agent.py").write_text(AGENT_FILE)
    brain = Brain()
    model = FunctionModel(default=brain)
    client = RecordingClient()
    async with crow(home, model, monkeypatch, client, agent=f"{tmp_path / 'agent.py'}:make") as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=turn("one", 50))
        await conn.prompt(session_id=sid, prompt=[text("turn two #compact [p=60]")])
        assert brain.summaries == [], "a trigger waits for the next safe point"
        await conn.prompt(session_id=sid, prompt=turn("three", 70))
        assert len(brain.summaries) == 1
        assert "the fruit totals" in brain.summaries[0]["messages"][1]["content"]
        request = [m.get("content") or "" for m in brain.turns[-1]["messages"]]
        assert any(c.startswith(SUMMARY_PREFIX) for c in request)
        assert "turn one" not in json.dumps(request) and request[-1].startswith("turn three")
