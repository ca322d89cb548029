"""before_tool / after_tool: veto, rewrite, cached answer, result rewrite, and their order against the
permission policy and the modes; over ACP stdio (an MCP tool) and in process (a plugin tool)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from support.helpers import (
    HOOK_AGENT,
    RecordingClient,
    crow_env,
    echo_stdio,
    in_process,
    run_crow,
    text,
)
from support.records import read_log, results

from crow_acp import (
    AcpAgent,
    Allow,
    Answer,
    CrowCallbacks,
    FunctionTool,
    Refuse,
    Rewrite,
    ToolResult,
    load_config,
    permission_policy,
)
from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio


async def test_tool_hooks_over_stdio_veto_rewrite_cache_and_result_rewrite(crow_home, tmp_path):
    log = tmp_path / "hooks.jsonl"
    calls = [
        ToolCall("echo__add", {"a": 666, "b": 1}, id="vetoed"),
        ToolCall("echo__echo", {"text": "x"}, id="rewritten"),
        ToolCall("echo__add", {"a": 1, "b": 2}, id="cached"),
        ToolCall("echo__add", {"a": 2, "b": 2}, id="asked"),
    ]
    client = RecordingClient(permission="allow_once")
    async with ScriptedModel([Reply(tool_calls=calls), Reply(text="done")]) as model:
        env = crow_env(crow_home, model.base_url, HOOK_LOG=str(log))
        async with run_crow(client, env, "--agent", f"{HOOK_AGENT}:build_tool_hooks") as (conn, _):
            with anyio.fail_after(30):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[echo_stdio()])).session_id
                assert (await conn.prompt(session_id=sid, prompt=[text("go")])).stop_reason == "end_turn"
                await conn.close_session(session_id=sid)

    told = results(model.requests[1])
    assert told == {
        "vetoed": "666 is not a number I add",  # the veto is what the model sees
        "rewritten": "ECHO: REWRITTEN",  # the tool got the rewritten text, after_tool shouted its answer
        "cached": "3 (cached)",  # no tool ran, nobody was asked
        "asked": "4",
    }
    # Only the call the guard let through was asked about (echo is read-only, add is not).
    assert [request[0].tool_call_id for request in client.permission_requests] == ["asked"]
    assert client.tool_updates("vetoed")[-1].status == "failed"
    assert client.tool_updates("cached")[-1].status == "completed"
    entries = read_log(log)
    seen = {e["call"]: e for e in entries if e["hook"] == "before_tool"}
    assert seen["rewritten"]["arguments"] == {"text": "x"} and seen["rewritten"]["read_only"] is True
    after = {e["call"]: (e["ran"], e["text"]) for e in entries if e["hook"] == "after_tool"}
    assert after == {
        "vetoed": (False, "666 is not a number I add"),
        "rewritten": (True, "echo: rewritten"),
        "cached": (False, "3 (cached)"),
        "asked": (True, "4"),
    }
    assert [(e["hook"], e["reason"]) for e in entries if e["hook"] == "end_session"] == [("end_session", "closed")]


def shout_tool(ran: list[dict[str, Any]]) -> FunctionTool:
    async def shout(arguments: dict[str, Any], context: Any) -> str:
        ran.append(arguments)
        return str(arguments.get("text", "")).upper()

    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    return FunctionTool("shout", "Shout.", schema, shout, kind="other")


def order_guard(order: list[str]) -> Any:
    """A guard that logs, vetoes rm -rf, rewrites "lower", answers "cached" and allows the rest."""

    async def guard(session: Any, *, call: Any, **_: Any) -> Any:
        order.append(f"guard:{call.id}")
        words = call.arguments.get("text", "")
        if "rm -rf" in words:
            return Refuse("never run rm -rf")
        if words == "lower":
            return Rewrite({"text": "rewritten"})
        if words == "cached":
            return Answer(ToolResult("from the cache"))
        return Allow()

    return guard


class OrderClient(RecordingClient):
    def __init__(self, order: list[str], permission: str = "allow_once") -> None:
        super().__init__(permission)
        self.order = order

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> Any:
        self.order.append(f"ask:{tool_call.tool_call_id}")
        return await super().request_permission(session_id, tool_call, options, **kwargs)


def four_calls() -> list[ToolCall]:
    return [
        ToolCall("shout", {"text": "rm -rf /"}, id="veto"),
        ToolCall("shout", {"text": "lower"}, id="rewrite"),
        ToolCall("shout", {"text": "cached"}, id="cache"),
        ToolCall("shout", {"text": "secret"}, id="plain"),
    ]


async def run_in_process(crow_home, tmp_path, monkeypatch, callbacks, client, mode=None, script=None) -> Any:
    async with ScriptedModel(script or [Reply(tool_calls=four_calls()), Reply(text="ok")]) as model:
        monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        async with in_process(AcpAgent(load_config(home=crow_home))) as agent:
            agent.on_connect(client)
            agent.set_callbacks(callbacks)
            with anyio.fail_after(20):
                sid = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                if mode:
                    await agent.set_config_option(config_id="mode", session_id=sid, value=mode)
                response = await agent.prompt(prompt=[{"type": "text", "text": "go"}], session_id=sid)
                assert response.stop_reason == "end_turn"
    return model


async def test_in_process_hooks_run_before_the_question_which_shows_the_rewrite(crow_home, tmp_path, monkeypatch):
    ran: list[dict[str, Any]] = []
    order: list[str] = []

    async def redact(session: Any, *, result: ToolResult, **_: Any) -> ToolResult | None:
        return ToolResult("[redacted]") if result.text == "SECRET" else None

    callbacks = CrowCallbacks(
        begin_session=[lambda session, **_: session.add_tool(shout_tool(ran))],
        before_tool=[order_guard(order)],
        after_tool=[redact],
    )
    client = OrderClient(order)
    model = await run_in_process(crow_home, tmp_path, monkeypatch, callbacks, client)

    assert results(model.requests[1]) == {
        "veto": "never run rm -rf",
        "rewrite": "REWRITTEN",
        "cache": "from the cache",
        "plain": "[redacted]",  # after_tool replaced what the model sees
    }
    assert sorted(ran, key=str) == [{"text": "rewritten"}, {"text": "secret"}]  # the cache ran no tool
    # Every guard ran before any question; a guard that allowed did not skip it; the veto and the
    # cached answer were never asked about; the question showed the rewritten arguments.
    for call_id in ("rewrite", "plain"):
        assert order.index(f"guard:{call_id}") < order.index(f"ask:{call_id}")
    assert {o for o in order if o.startswith("ask:")} == {"ask:rewrite", "ask:plain"}
    asked = {request[0].tool_call_id: request[0].raw_input for request in client.permission_requests}
    assert asked == {"rewrite": {"text": "rewritten"}, "plain": {"text": "secret"}}


async def test_the_policy_placed_first_asks_before_the_guard(crow_home, tmp_path, monkeypatch):
    ran: list[dict[str, Any]] = []
    order: list[str] = []
    callbacks = CrowCallbacks(
        begin_session=[lambda session, **_: session.add_tool(shout_tool(ran))],
        before_tool=[permission_policy, order_guard(order)],
    )
    client = OrderClient(order, permission="reject_once")
    model = await run_in_process(crow_home, tmp_path, monkeypatch, callbacks, client)
    # Rejected at the question, so the guard never saw any call.
    assert {o.split(":")[0] for o in order} == {"ask"} and len(order) == 4
    assert set(results(model.requests[1]).values()) == {"The user rejected this tool call."}
    assert ran == []


@pytest.mark.parametrize("mode", ["plan", "full_access"])
async def test_hooks_hold_in_every_mode(crow_home, tmp_path, monkeypatch, mode):
    ran: list[dict[str, Any]] = []
    order: list[str] = []
    callbacks = CrowCallbacks(
        begin_session=[lambda session, **_: session.add_tool(shout_tool(ran))],
        before_tool=[order_guard(order)],
    )
    client = OrderClient(order)
    model = await run_in_process(crow_home, tmp_path, monkeypatch, callbacks, client, mode=mode)
    told = results(model.requests[1])
    # The veto and the cached answer come first, whatever the mode says after them.
    assert told["veto"] == "never run rm -rf" and told["cache"] == "from the cache"
    assert not [o for o in order if o.startswith("ask:")]  # neither mode asks
    if mode == "plan":  # shout is not read-only: the mode refuses it, rewritten or not
        assert told["rewrite"].startswith("Plan mode:") and told["plain"].startswith("Plan mode:")
        assert ran == []
    else:
        assert (told["rewrite"], told["plain"]) == ("REWRITTEN", "SECRET")


async def test_a_raising_or_confused_guard_refuses_the_call(crow_home, tmp_path, monkeypatch):
    ran: list[dict[str, Any]] = []

    async def broken(session: Any, *, call: Any, **_: Any) -> Any:
        if call.id == "veto":
            raise RuntimeError("guard crashed")
        if call.id == "rewrite":
            return Rewrite(["not", "an", "object"])  # type: ignore[arg-type]
        if call.id == "cache":
            return {"allow": True}  # a magic dict is not a decision
        return None

    callbacks = CrowCallbacks(
        begin_session=[lambda session, **_: session.add_tool(shout_tool(ran))], before_tool=[broken]
    )
    model = await run_in_process(crow_home, tmp_path, monkeypatch, callbacks, RecordingClient())
    told = results(model.requests[1])
    assert "guard failed (RuntimeError)" in told["veto"]
    assert "not a decision" in told["rewrite"] and "not a decision" in told["cache"]
    assert told["plain"] == "SECRET" and ran == [{"text": "secret"}]


async def test_editor_tools_go_through_the_same_hooks(crow_home, tmp_path, monkeypatch):
    from crow_acp.editor import editor_tools

    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")

    async def no_rm_rf(session: Any, *, call: Any, **_: Any) -> Any:
        return Refuse("never run rm -rf") if "rm -rf" in str(call.arguments) else None

    async def stamp(session: Any, *, call: Any, result: ToolResult, **_: Any) -> Any:
        return ToolResult(f"[{call.kind}] {result.text}") if call.name == "read_file" else None

    calls = [
        ToolCall("run_command", {"command": f"rm -rf {tmp_path}"}, id="rm"),
        ToolCall("read_file", {"path": "precious.txt"}, id="read"),
    ]
    callbacks = CrowCallbacks(begin_session=[editor_tools()], before_tool=[no_rm_rf], after_tool=[stamp])
    model = await run_in_process(
        crow_home,
        tmp_path,
        monkeypatch,
        callbacks,
        RecordingClient(),
        mode="full_access",
        script=[Reply(tool_calls=calls), Reply(text="ok")],
    )
    told = results(model.requests[1])
    assert told["rm"] == "never run rm -rf" and precious.read_text() == "keep me"
    assert told["read"].startswith("[read] ") and "keep me" in told["read"]
