"""Plan operations (ACP 1.34) over stdio: `plan_update` and `plan_removed` for a client that opted in,
the legacy `plan` for one that did not, and the plans replayed on load. Every message crow sends is
checked against the zod schemas of @agentclientprotocol/sdk 2.4.0."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from support.helpers import RecordingClient, crow_env, text
from support.multi_support import functions, in_process
from support.raw_wire import INITIALIZE, RawCrow, raw_crow
from support.zod_check import problems, wire_messages

from crow_acp.acp.rpc.shapes import ClientFeatures
from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio

OPTED_IN = {**INITIALIZE, "clientCapabilities": {"plan": {}}}
ITEMS = {"entries": [{"content": "Read the code", "status": "in_progress", "priority": "high"}]}
MARKDOWN = {"markdown": "# Fix\n\n- [x] read\n- [ ] write", "path": "/tmp/plan.md"}
SCRIPT = [
    Reply(tool_calls=[ToolCall("write_plan", ITEMS, id="p1")]),
    Reply(tool_calls=[ToolCall("write_plan", MARKDOWN, id="p2")]),
    Reply(text="planned"),
    Reply(tool_calls=[ToolCall("write_plan", {"entries": []}, id="p3")]),
    Reply(text="dropped"),
]
ITEMS_UPDATE = {
    "sessionUpdate": "plan_update",
    "plan": {
        "type": "items",
        "planId": "plan",
        "entries": [{"content": "Read the code", "status": "in_progress", "priority": "high"}],
    },
}
MARKDOWN_UPDATE = {
    "sessionUpdate": "plan_update",
    "plan": {"type": "markdown", "planId": "plan", "content": MARKDOWN["markdown"], "_meta": {"path": "/tmp/plan.md"}},
}
LEGACY_ITEMS = {"sessionUpdate": "plan", "entries": ITEMS_UPDATE["plan"]["entries"]}  # type: ignore[index]
PLAN_KINDS = ("plan", "plan_update", "plan_removed")


def plan_updates(crow: RawCrow, since: int = 0) -> list[dict[str, Any]]:
    return [u for u in crow.updates[since:] if u["sessionUpdate"] in PLAN_KINDS]


async def load(crow: RawCrow, session_id: str, cwd: str) -> list[dict[str, Any]]:
    """The plan updates of a session/load's replay."""
    since = len(crow.updates)
    reply = await crow.call("session/load", {"sessionId": session_id, "cwd": cwd, "mcpServers": []})
    assert "result" in reply, reply
    return plan_updates(crow, since)


async def run_script(crow_home: Any, cwd: str, initialize: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The plan updates of: prompt 1 (a checklist, then Markdown), load, prompt 2 (the plan dropped), load."""
    seen = []
    async with ScriptedModel(SCRIPT) as model:
        async with raw_crow(crow_env(crow_home, model.base_url), initialize=initialize) as crow:
            session_id = await crow.new_session(cwd)
            assert (await crow.prompt(session_id, "plan it"))["result"]["stopReason"] == "end_turn"
            seen.append(plan_updates(crow))
            seen.append(await load(crow, session_id, cwd))
            since = len(crow.updates)
            assert (await crow.prompt(session_id, "drop it"))["result"]["stopReason"] == "end_turn"
            seen.append(plan_updates(crow, since))
            seen.append(await load(crow, session_id, cwd))
            assert problems(wire_messages(crow.received)) == []
    results = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    assert results[-1] == "Plan removed."
    return seen


async def test_an_opted_in_client_gets_plan_operations_and_the_last_plan_on_load(crow_home, tmp_path):
    live, replayed, dropped, replayed_after = await run_script(crow_home, str(tmp_path), OPTED_IN)
    assert live == [ITEMS_UPDATE, MARKDOWN_UPDATE]  # one plan id: the Markdown replaces the checklist
    assert replayed == [MARKDOWN_UPDATE]  # the last state of the plan, once
    assert dropped == [{"sessionUpdate": "plan_removed", "planId": "plan"}]
    assert replayed_after == []  # a removed plan is not brought back


async def test_a_client_without_plan_operations_keeps_the_legacy_plan(crow_home, tmp_path):
    live, replayed, dropped, replayed_after = await run_script(crow_home, str(tmp_path), INITIALIZE)
    assert live == [LEGACY_ITEMS]  # a Markdown plan is no checklist: it stays in the tool call
    assert replayed == [LEGACY_ITEMS]  # the panel as it was at each call, as before
    cleared = {"sessionUpdate": "plan", "entries": []}
    assert dropped == [cleared]
    assert replayed_after == [LEGACY_ITEMS, cleared]


async def test_a_graph_of_agents_replays_the_last_state_of_its_plans(crow_home, tmp_path, monkeypatch):
    def plan_then(arguments: dict[str, Any], words: str) -> list[Reply]:
        return [Reply(tool_calls=[ToolCall("write_plan", arguments)]), Reply(text=words)]

    scripts = {
        "coder": plan_then(ITEMS, "coded"),
        "reviewer": plan_then({"entries": []}, "reviewed"),
        "tester": plan_then({"markdown": MARKDOWN["markdown"]}, "tested"),
    }
    live, reloaded, features = RecordingClient(), RecordingClient(), ClientFeatures(plan=True)
    models = functions(**scripts)
    async with in_process(live, "build", crow_home, models, monkeypatch, features=features) as conn:
        with anyio.fail_after(60):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[text("build it")])
    async with in_process(reloaded, "build", crow_home, models, monkeypatch, features=features) as conn:
        with anyio.fail_after(60):
            await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
    kinds = [u.session_update for u in live.updates if u.session_update in PLAN_KINDS]
    assert kinds == ["plan_update", "plan_removed", "plan_update"]
    replayed = [u for u in reloaded.updates if u.session_update in PLAN_KINDS]
    assert [(u.plan.type, u.plan.plan_id) for u in replayed] == [("markdown", "plan")]  # once, the last state
