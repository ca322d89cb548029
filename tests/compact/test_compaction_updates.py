"""Compaction as the editor sees it, over stdio (ACP 1.25), and the tool call's `name` (1.22).

A client that advertises `session.compaction` gets `compaction_update` (in_progress, then completed
or cancelled, one id) and the summary as `compaction_summary_chunk`; a load replays the compaction in
its place. Any other client keeps the "Compacting context" tool call. Every message crow sends is
checked against the zod schemas of @agentclientprotocol/sdk 2.4.0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from support.compact_brain import Brain, turn
from support.helpers import crow_env, write_config
from support.raw_wire import RawCrow, raw_crow
from support.zod_check import problems, wire_messages

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio

OPTED_IN = {"session": {"compaction": {}}}
COMPACTION = ("compaction_update", "compaction_summary_chunk")


def of_kind(updates: list[dict[str, Any]], *kinds: str) -> list[dict[str, Any]]:
    return [u for u in updates if u["sessionUpdate"] in kinds]


def chunk_text(update: dict[str, Any]) -> str:
    return update["content"]["text"] if update["sessionUpdate"].endswith("_chunk") else ""


async def prompt_blocks(crow: RawCrow, sid: str, blocks: list[Any]) -> dict[str, Any]:
    prompt = [block.model_dump(by_alias=True, exclude_none=True) for block in blocks]
    return await crow.call("session/prompt", {"sessionId": sid, "prompt": prompt})


async def compact_a_session(crow: RawCrow, cwd: Path) -> str:
    sid = await crow.new_session(str(cwd))
    for blocks in (turn("one", 100, filler=True), turn("two", 200, filler=True), turn("three", 420)):
        assert (await prompt_blocks(crow, sid, blocks))["result"]["stopReason"] == "end_turn"
    return sid


async def load(env: dict[str, str], sid: str, cwd: Path, capabilities: dict[str, Any]) -> list[dict[str, Any]]:
    """The updates a fresh crow replays for `sid`, after checking every message it sent."""
    async with raw_crow(env, capabilities=capabilities) as crow:
        reply = await crow.call("session/load", {"cwd": str(cwd), "sessionId": sid, "mcpServers": []})
        assert "result" in reply, reply
        assert problems(wire_messages(crow.received)) == []
        return crow.updates


@pytest.fixture
def home(crow_home: Path) -> Path:
    write_config(crow_home, "[compaction]\nthreshold = 300\nkeep_last = 2\n")
    return crow_home


async def test_an_opted_in_client_sees_compaction_updates_live_and_on_load(home, tmp_path):
    async with ScriptedModel(default=Brain()) as model:
        env = crow_env(home, model.base_url)
        async with raw_crow(env, capabilities=OPTED_IN) as crow:
            sid = await compact_a_session(crow, tmp_path)
            assert problems(wire_messages(crow.received)) == []
            live = crow.updates
        shown = of_kind(live, *COMPACTION)
        assert [(u["sessionUpdate"], u.get("status")) for u in shown] == [
            ("compaction_update", "in_progress"),
            ("compaction_summary_chunk", None),
            ("compaction_update", "completed"),
        ]
        assert len({u["compactionId"] for u in shown}) == 1
        assert chunk_text(shown[1]) == "SUMMARY-1: the user lists fruit."
        assert not [u for u in live if u.get("title") == "Compacting context"], "no tool call for this client"
        # It happened after the third reply, before the context gauge moved.
        after = live[live.index(shown[-1]) + 1 :]
        assert "ack three" in "".join(chunk_text(u) for u in live[: live.index(shown[0])])
        assert after[0]["sessionUpdate"] == "usage_update"

        replayed = await load(env, sid, tmp_path, OPTED_IN)
    [again] = of_kind(replayed, *COMPACTION)
    assert again["compactionId"] == shown[0]["compactionId"], "the same compaction, by its id"
    assert again["status"] == "completed"
    assert again["summary"] == [{"type": "text", "text": "SUMMARY-1: the user lists fruit."}]
    texts = [chunk_text(u) for u in replayed]
    position = replayed.index(again)
    assert "ack two" in "".join(texts[:position]), "in its place: after the summarised turns"
    assert not [u for u in replayed if u.get("title") == "Context compacted"]


async def test_a_client_without_the_capability_keeps_the_tool_call(home, tmp_path):
    async with ScriptedModel(default=Brain()) as model:
        env = crow_env(home, model.base_url)
        async with raw_crow(env) as crow:
            sid = await compact_a_session(crow, tmp_path)
            assert problems(wire_messages(crow.received)) == []
            live = crow.updates
        assert not of_kind(live, *COMPACTION)
        shown = [u for u in of_kind(live, "tool_call", "tool_call_update") if u["toolCallId"].startswith("compaction-")]
        assert [(u["sessionUpdate"], u["status"]) for u in shown] == [
            ("tool_call", "in_progress"),
            ("tool_call_update", "completed"),
        ]
        assert shown[0]["title"] == shown[1]["title"] == "Compacting context"
        assert "tokens" in shown[1]["content"][0]["content"]["text"]
        assert "name" not in shown[0], "crow's own step, not a tool the model called"

        replayed = await load(env, sid, tmp_path, {})
    assert not of_kind(replayed, *COMPACTION)
    assert [u["title"] for u in of_kind(replayed, "tool_call") if u["title"] == "Context compacted"]


async def test_a_cancelled_compaction_is_reported_cancelled(home, tmp_path):
    brain = Brain()
    async with ScriptedModel(default=brain) as model:
        async with raw_crow(crow_env(home, model.base_url), capabilities=OPTED_IN) as crow:
            sid = await crow.new_session(str(tmp_path))
            for blocks in (turn("one", 100, filler=True), turn("two", 200, filler=True)):
                await prompt_blocks(crow, sid, blocks)
            brain.summary_delay = 60
            request = await crow.send(
                "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "/compact"}]}
            )
            await crow.wait_for(lambda c: of_kind(c.updates, "compaction_update"))
            with anyio.fail_after(30):  # the summary request reached the model: it is being written now
                while not brain.summaries:  # noqa: ASYNC110 (the scripted model signals nothing)
                    await anyio.sleep(0.02)
            await crow.notify("session/cancel", {"sessionId": sid})
            assert (await crow.answer(request))["result"]["stopReason"] == "cancelled"
            assert problems(wire_messages(crow.received)) == []
            shown = of_kind(crow.updates, *COMPACTION)
    assert [u.get("status") for u in shown] == ["in_progress", "cancelled"]
    assert shown[0]["compactionId"] == shown[1]["compactionId"]


async def test_tool_calls_carry_the_name_the_model_called_live_and_on_load(crow_home, tmp_path):
    (tmp_path / "notes.txt").write_text("pears\n")
    script = [Reply(tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]), Reply(text="read it")]
    async with ScriptedModel(script) as model:
        env = crow_env(crow_home, model.base_url)
        async with raw_crow(env) as crow:  # any client: `name` is stable since 1.22
            sid = await crow.new_session(str(tmp_path))
            assert (await crow.prompt(sid, "read my notes"))["result"]["stopReason"] == "end_turn"
            assert problems(wire_messages(crow.received)) == []
            live = of_kind(crow.updates, "tool_call", "tool_call_update")
        assert [(u["sessionUpdate"], u.get("status"), u.get("name")) for u in live] == [
            ("tool_call", "pending", "read_file"),
            ("tool_call_update", "in_progress", None),
            ("tool_call_update", "completed", "read_file"),
        ]
        replayed = of_kind(await load(env, sid, tmp_path, {}), "tool_call")
    assert [(u["title"], u["name"], u["status"]) for u in replayed] == [(live[0]["title"], "read_file", "completed")]


async def test_a_failed_compaction_says_why_and_leaves_nothing_to_replay(home, tmp_path):
    brain = Brain()
    brain.fail_summary = True
    async with ScriptedModel(default=brain) as model:
        env = crow_env(home, model.base_url)
        async with raw_crow(env, capabilities=OPTED_IN) as crow:
            sid = await compact_a_session(crow, tmp_path)
            assert problems(wire_messages(crow.received)) == []
            shown = of_kind(crow.updates, *COMPACTION)
        assert [u["status"] for u in shown] == ["in_progress", "failed"]
        assert "the summary request was refused" in shown[1]["error"] and "unchanged" in shown[1]["error"]
        assert not of_kind(await load(env, sid, tmp_path, OPTED_IN), *COMPACTION), "the history was not compacted"
