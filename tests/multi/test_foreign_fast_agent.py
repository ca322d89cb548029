"""fast-agent from PyPI (tests/support/fast_agent.py installs it once) as a chain member and as a delegate's helper,
on a scripted model: a third-party ACP agent, unchanged, driven by crow as its client (its answer, its
permission questions before an MCP tool call, session/cancel)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from support import multi_support
from support.fast_agent import ensure
from support.helpers import RecordingClient, crow_env, text
from support.multi_support import functions
from support.raw_wire import eventually, raw_crow
from support.zod_check import problems, wire_messages
from test_children import SUBAGENTS, said, states
from test_delegate import asked_by, by_prompt, helper_children, parent_turn, tool_results

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


def fast_config(path: Path, model_url: str, *, echo: bool = False) -> Path:
    """fast-agent's config: the scripted model as its `generic` provider; with `echo`, tests/mcp_servers/echo_server.py
    (on crow's Python) as its MCP server `echo`."""
    text = f"generic:\n  api_key: test-key\n  base_url: {model_url}\n"
    if echo:
        server = json.dumps([str(multi_support.TESTS / "mcp_servers" / "echo_server.py")])
        text += f"mcp:\n  servers:\n    echo:\n      command: {json.dumps(sys.executable)}\n      args: {server}\n"
    path.write_text(text)
    return path


def in_chain(client, crow_home, models, monkeypatch, command: Path, config: Path, **env: str):
    monkeypatch.setattr(multi_support, "AGENTS", multi_support.TESTS / "agents" / "foreign_graphs.py")
    env = {"FAST_AGENT_BIN": str(command), "FAST_AGENT_CONFIG": str(config), **env}
    return multi_support.in_process(client, "build_fast_agent", crow_home, models, monkeypatch, env)


@pytest.mark.parametrize(("answer", "ran"), [("allow_once", True), ("cancelled", False)])
async def test_fast_agents_permission_question_goes_to_the_editor(crow_home, tmp_path, monkeypatch, answer, ran):
    """fast-agent asks before it calls an MCP tool; the question reaches the editor attributed, and only an
    offered option the editor chose lets the tool run (a cancel is a rejection)."""
    command = await anyio.to_thread.run_sync(ensure)
    models = functions(coder=[Reply(text="echo it please")])
    client = RecordingClient(permission=answer)
    call = ToolCall("echo__echo", {"text": "PINEAPPLE"}, id="fast_call")
    async with ScriptedModel([Reply(tool_calls=[call]), Reply(text="FAST DONE")]) as fast_model:
        config = fast_config(tmp_path / "fastagent.config.yaml", fast_model.base_url, echo=True)
        async with in_chain(client, crow_home, models, monkeypatch, command, config, FAST_AGENT_SERVERS="echo") as conn:
            with anyio.fail_after(180):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                response = await conn.prompt(session_id=sid, prompt=[text("go")])
    assert response.stop_reason == "end_turn" and "FAST DONE" in client.text()
    [(asked, options)] = client.permission_requests
    assert asked.tool_call_id.startswith("fast/") and asked.title.startswith("fast: ")
    assert "allow_once" in [o.option_id for o in options]
    results = [m["content"] for m in fast_model.requests[1]["messages"] if m["role"] == "tool"]
    assert len(results) == 1 and ("PINEAPPLE" in str(results[0])) == ran


async def test_cancel_reaches_fast_agent_and_it_serves_the_next_turn(crow_home, tmp_path, monkeypatch, caplog):
    """session/cancel stops fast-agent's turn (its model request hangs): it ends the turn itself, in time, so its
    link stays, and the next turn goes to the same fast-agent."""
    command = await anyio.to_thread.run_sync(ensure)
    models = functions(coder=[Reply(text="take your time"), Reply(text="now quickly")])
    client = RecordingClient()
    replies = [Reply(text="TOO LATE", first_delay=60), Reply(text="AFTER THE CANCEL")]
    async with ScriptedModel(replies) as fast_model:
        config = fast_config(tmp_path / "fastagent.config.yaml", fast_model.base_url)
        async with in_chain(client, crow_home, models, monkeypatch, command, config) as conn:
            with anyio.fail_after(180):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                answers = []
                async with anyio.create_task_group() as group:

                    async def prompt() -> None:
                        answers.append(await conn.prompt(session_id=sid, prompt=[text("go")]))

                    group.start_soon(prompt)
                    await eventually(lambda: len(fast_model.requests) == 1, timeout=120)
                    await conn.cancel(session_id=sid)
                again = await conn.prompt(session_id=sid, prompt=[text("again")])
    assert answers[0].stop_reason == "cancelled" and again.stop_reason == "end_turn"
    assert "TOO LATE" not in client.text() and "**fast:** AFTER THE CANCEL" in client.text()
    assert multi_support.last_user(fast_model.requests[-1]) == "now quickly"
    assert "did not end its cancelled turn" not in caplog.text  # it answered the cancel: the link was kept
