"""fast-agent from PyPI (tests/fast_agent.py installs it once) as a chain member and as a delegate's helper,
on a scripted model: a third-party ACP agent, unchanged, driven by crow as its client."""

from __future__ import annotations

import json

import anyio
import multi_support
import pytest
from fast_agent import ensure
from helpers import RecordingClient, crow_env, text
from multi_support import functions
from raw_wire import raw_crow
from test_delegate import asked_by, by_prompt, helper_children, parent_turn, tool_results
from test_multi_children import SUBAGENTS, said, states
from zod_check import problems, wire_messages

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio


async def test_fast_agent_is_a_chain_member(crow_home, tmp_path, monkeypatch):
    command = await anyio.to_thread.run_sync(ensure)
    models = functions(coder=[Reply(text="review this please")])
    client = RecordingClient()
    async with ScriptedModel([Reply(text="FAST AGENT REVIEW")]) as fast_model:
        config = tmp_path / "fastagent.config.yaml"
        config.write_text(f"generic:\n  api_key: test-key\n  base_url: {fast_model.base_url}\n")
        env = {"FAST_AGENT_BIN": str(command), "FAST_AGENT_CONFIG": str(config)}
        monkeypatch.setattr(multi_support, "AGENTS", multi_support.TESTS / "agents" / "foreign_graphs.py")
        async with multi_support.in_process(client, "build_fast_agent", crow_home, models, monkeypatch, env) as conn:
            with anyio.fail_after(180):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                response = await conn.prompt(session_id=sid, prompt=[text("go")])
    assert response.stop_reason == "end_turn"
    assert multi_support.last_user(fast_model.requests[0]) == "review this please"
    assert "**fast:** FAST AGENT REVIEW" in client.text()


async def test_fast_agent_is_a_delegate_helper(crow_home, tmp_path):
    """`[delegate] agents = ["fast"]` with `[agents.fast]` running fast-agent: the task is its prompt, its
    answer the delegate call's result, shown as a child session."""
    command = await anyio.to_thread.run_sync(ensure)
    async with ScriptedModel([Reply(text="FAST AGENT ANSWER")]) as fast_model, ScriptedModel() as model:
        config = tmp_path / "fastagent.config.yaml"
        config.write_text(f"generic:\n  api_key: test-key\n  base_url: {fast_model.base_url}\n")
        fast = [str(command), "serve", "--transport", "acp", "-c", str(config), "--model", "generic.scripted-fast"]
        (crow_home / "config.toml").write_text(
            f'[delegate]\nenabled = true\nagents = ["fast"]\n[agents.fast]\ncommand = {json.dumps(fast)}\n'
        )
        call = ToolCall("delegate", {"task": "summarize the repo"}, id="call_f")
        model.default = by_prompt(model, {"go": parent_turn(call)})
        async with raw_crow(crow_env(crow_home, model.base_url), cwd=tmp_path, capabilities=SUBAGENTS) as crow:
            parent = await crow.new_session(str(tmp_path))
            answer = await crow.prompt(parent, "go", timeout=180)
            live = list(crow.received)
    assert answer["result"]["stopReason"] == "end_turn"
    assert multi_support.last_user(fast_model.requests[0]) == "summarize the repo"
    assert tool_results(asked_by(model, "go")[-1]) == {"call_f": "FAST AGENT ANSWER"}
    child = helper_children(live)["summarize the repo"]
    assert states(live, child) == [("running", None), ("idle", "end_turn")]
    assert "FAST AGENT ANSWER" in said(live, child)
    assert problems(wire_messages(live)) == []
