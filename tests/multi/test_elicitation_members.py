"""Elicitation from a member of a MultiAgent and from a delegate's helper: an MCP server's question in the
middle of one of their tool calls reaches the editor where their work is shown. On the member's or helper's
child session, for an editor that opted in to subagents; otherwise on the editor's session, under the id the
editor knows (the attributed "reviewer/call_1", or the delegate call). The answer goes back to the server.
Over stdio with a raw editor; every message is checked against the ACP SDK's zod schemas.
"""

from __future__ import annotations

import json

import pytest
from support.elicit_support import FORM, GOOD, SERVER, next_question, prompt_params, reply_to, tool_result
from support.helpers import crow_env
from support.multi_support import AGENTS, multi_env, scripted
from support.raw_wire import RawCrow, raw_crow
from support.zod_check import problems, wire_messages
from test_children import SUBAGENTS, children
from test_delegate import by_prompt, delegate, parent_turn

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio
BOOK = ToolCall("elicit__book", {"flight": "LH1"}, id="call_1")


def server_saw(result: str) -> dict:
    assert result.startswith("server saw "), result
    return json.loads(result.removeprefix("server saw "))


async def answered_turn(crow: RawCrow, sid: str) -> dict:
    """Prompt `sid`, answer the one question that comes with GOOD, and return the question."""
    prompt = await crow.send("session/prompt", prompt_params(sid))
    question = await next_question(crow, 0)
    await reply_to(crow, question, {"action": "accept", "content": GOOD})
    assert (await crow.answer(prompt))["result"]["stopReason"] == "end_turn"
    return question["params"]


@pytest.mark.parametrize("subagents", [True, False], ids=["child-sessions", "flattened"])
async def test_a_members_server_asks_the_editor_where_the_member_is_shown(crow_home, tmp_path, subagents):
    scripts = {
        "coder": [Reply(text="CODE-DONE")],
        "reviewer": [Reply(tool_calls=[BOOK]), Reply(text="REVIEWED")],
        "tester": [Reply(text="TESTED")],
    }
    capabilities = {**FORM, **SUBAGENTS} if subagents else FORM
    async with scripted(**scripts) as models:
        env = multi_env(crow_home, models)
        async with raw_crow(env, "--agent", f"{AGENTS}:build", cwd=tmp_path, capabilities=capabilities) as crow:
            parent = (await crow.call("session/new", {"cwd": str(tmp_path), "mcpServers": [SERVER]}))["result"]
            asked = await answered_turn(crow, parent["sessionId"])
    if subagents:
        assert (asked["sessionId"], asked["toolCallId"]) == (children(crow.received)["reviewer"], "call_1")
    else:
        assert (asked["sessionId"], asked["toolCallId"]) == (parent["sessionId"], "reviewer/call_1")
    assert server_saw(tool_result(models["reviewer"], "call_1")) == {"action": "accept", "content": GOOD}
    assert problems(wire_messages(crow.received)) == []


@pytest.mark.parametrize("subagents", [True, False], ids=["child-sessions", "flattened"])
async def test_a_helpers_server_asks_the_editor_where_the_helper_is_shown(crow_home, tmp_path, subagents):
    server = f"[mcp_servers.elicit]\ncommand = {json.dumps(SERVER['command'])}\nargs = {json.dumps(SERVER['args'])}\n"
    (crow_home / "config.toml").write_text(f'[delegate]\nenabled = true\nagents = ["crow"]\n{server}')
    capabilities = {**FORM, **SUBAGENTS} if subagents else FORM
    async with ScriptedModel() as model:
        helper = lambda n: Reply(tool_calls=[BOOK]) if n == 0 else Reply(text="BOOKED")  # noqa: E731
        model.default = by_prompt(model, {"go": parent_turn(delegate("book LH1", "d1")), "book LH1": helper})
        async with raw_crow(crow_env(crow_home, model.base_url), cwd=tmp_path, capabilities=capabilities) as crow:
            parent = await crow.new_session(str(tmp_path))
            asked = await answered_turn(crow, parent)
    if subagents:
        assert (asked["sessionId"], asked["toolCallId"]) == (children(crow.received)["crow"], "call_1")
    else:
        assert (asked["sessionId"], asked["toolCallId"]) == (parent, "d1")
    assert server_saw(tool_result(model, "call_1")) == {"action": "accept", "content": GOOD}
    assert problems(wire_messages(crow.received)) == []
