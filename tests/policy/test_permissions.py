"""Permission policy (policy/permissions.py): ask for tools not marked read-only, allow/deny/per-tool config,
allow_always persisted. And it fails closed: only an allow option crow offered in that very request runs the
call. Every other answer (unknown or empty id, malformed, a client error, no answer in time, a cancel)
refuses it and tells the model why; in process with hostile clients, and over ACP stdio."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse
from support.helpers import CORE_AGENT, RecordingClient, crow_env, echo_stdio, in_process, run_crow, text, write_config
from support.hosted import hosted_crow
from support.records import results

from crow_acp import AcpAgent, CrowCallbacks, FunctionTool, load_config
from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio


def add_call(call_id: str) -> Reply:
    return Reply(tool_calls=[ToolCall("echo__add", {"a": 1, "b": 2}, id=call_id)])


async def test_ask_reject_allow_once_and_allow_always_survives_a_restart(crow_home, tmp_path):
    script = [
        Reply(tool_calls=[ToolCall("echo__echo", {"text": "free"}, id="read"), *add_call("rejected").tool_calls]),
        Reply(text="ok"),
        add_call("once"),
        Reply(text="ok"),
        add_call("always"),
        Reply(text="ok"),
        add_call("remembered"),
        Reply(text="ok"),
        add_call("after-restart"),
        Reply(text="ok"),
    ]
    client = RecordingClient()
    async with ScriptedModel(script) as model:
        env = crow_env(crow_home, model.base_url)
        async with run_crow(client, env, "--agent", CORE_AGENT) as (conn, proc):
            with anyio.fail_after(30):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[echo_stdio()])).session_id
                answers = [("reject_once", "a"), ("allow_once", "b"), ("allow_always", "c"), ("reject_once", "d")]
                for answer, words in answers:
                    client.permission = answer
                    assert (await conn.prompt(session_id=sid, prompt=[text(words)])).stop_reason == "end_turn"
            proc.kill()  # allow_always must already be on disk

        restarted = RecordingClient(permission="reject_once")
        async with run_crow(restarted, env, "--agent", CORE_AGENT) as (conn, _):
            with anyio.fail_after(30):
                await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[echo_stdio()])
                assert (await conn.prompt(session_id=sid, prompt=[text("e")])).stop_reason == "end_turn"

    asked = [request[0] for request in client.permission_requests]
    assert [tool_call.tool_call_id for tool_call in asked] == ["rejected", "once", "always"]
    assert asked[0].title == "add (echo)" and asked[0].raw_input == {"a": 1, "b": 2}
    options = client.permission_requests[0][1]
    assert {option.kind for option in options} == {"allow_once", "allow_always", "reject_once"}
    assert restarted.permission_requests == []

    assert results(model.requests[1]) == {"read": "echo: free", "rejected": "The user rejected this tool call."}
    assert client.tool_updates("rejected")[-1].status == "failed"
    assert [u.status for u in client.tool_updates("once")] == ["pending", "in_progress", "completed"]
    finals = {
        call_id: results(model.requests[n])[call_id]
        for call_id, n in [("once", 3), ("always", 5), ("remembered", 7), ("after-restart", 9)]
    }
    assert finals == {"once": "3", "always": "3", "remembered": "3", "after-restart": "3"}


async def test_config_policies_and_per_tool_overrides(crow_home, tmp_path):
    write_config(
        crow_home,
        """
[permissions]
default = "deny"

[permissions.tools]
"echo__add" = "allow"
"echo__ech*" = "ask"
""",
    )
    calls = [
        ToolCall("echo__add", {"a": 2, "b": 2}, id="allowed"),
        ToolCall("echo__fail", {}, id="denied"),
        ToolCall("echo__echo", {"text": "asked"}, id="asked"),
    ]
    client = RecordingClient(permission="allow_once")
    async with ScriptedModel([Reply(tool_calls=calls), Reply(text="ok")]) as model:
        async with hosted_crow(client, crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as (conn, _):
            with anyio.fail_after(30):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[echo_stdio()])).session_id
                assert (await conn.prompt(session_id=sid, prompt=[text("go")])).stop_reason == "end_turn"

    # a pattern override beats read_only; the default no longer asks
    assert [request[0].tool_call_id for request in client.permission_requests] == ["asked"]
    told = results(model.requests[1])
    assert told["allowed"] == "4" and told["asked"] == "echo: asked"
    assert told["denied"] == "The tool 'echo__fail' is denied by the permission policy."
    assert client.tool_updates("denied")[-1].status == "failed"
    assert "in_progress" not in [u.status for u in client.tool_updates("denied")]


async def test_default_allow_and_ask_without_an_editor(crow_home, tmp_path, monkeypatch):
    """In process, with no editor attached to ask: `allow` runs the tool, `ask` refuses and says why."""

    async def shout(arguments: dict[str, Any], context: Any) -> str:
        return arguments["text"].upper()

    tool = FunctionTool(
        "shout", "Shout the text.", {"type": "object", "properties": {"text": {"type": "string"}}}, shout
    )

    def add_tool(session: Any, **_: Any) -> None:
        session.add_tool(tool)

    script = [Reply(tool_calls=[ToolCall("shout", {"text": "hi"}, id="c")]), Reply(text="ok")] * 2
    async with ScriptedModel(script) as model:
        monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        told = []
        for policy in ("allow", "ask"):
            write_config(crow_home, f'[permissions]\ndefault = "{policy}"\n')
            async with in_process(AcpAgent(load_config(home=crow_home))) as agent:
                agent.set_callbacks(CrowCallbacks(begin_session=[add_tool]))
                with anyio.fail_after(20):
                    sid = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                    response = await agent.prompt(prompt=[{"type": "text", "text": "shout"}], session_id=sid)
            assert response.stop_reason == "end_turn"
            told.append(results(model.requests[-1])["c"])
    assert told == ["HI", "The tool 'shout' needs permission, and no editor is attached to ask."]


def selected(option_id: str) -> RequestPermissionResponse:
    return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option_id))


class HostileClient(RecordingClient):
    """Answers every permission request with `answer` (a value, or a callable that may raise or hang)."""

    def __init__(self, answer: Any) -> None:
        super().__init__()
        self.answer = answer

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **_: Any) -> Any:
        self.permission_requests.append((tool_call, options))
        self._notify()
        return await self.answer() if callable(self.answer) else self.answer


async def boom() -> Any:
    raise ConnectionResetError("the editor went away")


async def silence() -> Any:
    await anyio.sleep_forever()


ANSWERS = {
    "unknown id": (selected("allow_everything"), "option crow did not offer"),
    "empty id": (selected(""), "option crow did not offer"),
    "reject": (selected("reject_once"), "The user rejected this tool call."),
    "cancelled": (RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled")), "was cancelled"),
    "malformed dict": ({"outcome": {"outcome": "selected"}}, "malformed"),
    "malformed text": ("yes please", "malformed"),
    "none": (None, "malformed"),
    "client error": (boom, "permission request failed (ConnectionResetError)"),
    "timeout": (silence, "No answer to the permission request within 0.5 s"),
}


@pytest.mark.parametrize("case", list(ANSWERS))
async def test_anything_but_an_offered_allow_refuses(crow_home, tmp_path, monkeypatch, case):
    answer, reason = ANSWERS[case]
    ran: list[Any] = []

    async def touch(arguments: dict[str, Any], context: Any) -> str:
        ran.append(arguments)
        return "touched"

    tool = FunctionTool("touch", "Touch.", {"type": "object", "properties": {}}, touch)
    write_config(crow_home, "[permissions]\ntimeout = 0.5\n")
    client = HostileClient(answer)
    async with ScriptedModel([Reply(tool_calls=[ToolCall("touch", {}, id="t")]), Reply(text="ok")]) as model:
        monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        async with in_process(AcpAgent(load_config(home=crow_home))) as agent:
            agent.on_connect(client)
            agent.set_callbacks(CrowCallbacks(begin_session=[lambda session, **_: session.add_tool(tool)]))
            with anyio.fail_after(30):
                sid = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                response = await agent.prompt(prompt=[{"type": "text", "text": "touch"}], session_id=sid)
    assert response.stop_reason == "end_turn"
    assert ran == [] and len(client.permission_requests) == 1
    assert reason in results(model.requests[1])["t"]
    assert client.tool_updates("t")[-1].status == "failed"


async def test_a_cancel_during_the_question_refuses_and_the_history_stays_valid(crow_home, tmp_path, monkeypatch):
    ran: list[Any] = []

    async def touch(arguments: dict[str, Any], context: Any) -> str:
        ran.append(arguments)
        return "touched"

    tool = FunctionTool("touch", "Touch.", {"type": "object", "properties": {}}, touch)
    client = HostileClient(silence)
    script = [Reply(tool_calls=[ToolCall("touch", {}, id="t")]), Reply(text="next")]
    async with ScriptedModel(script) as model:
        monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        async with in_process(AcpAgent(load_config(home=crow_home))) as agent:
            agent.on_connect(client)
            agent.set_callbacks(CrowCallbacks(begin_session=[lambda session, **_: session.add_tool(tool)]))
            with anyio.fail_after(30):
                sid = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                async with anyio.create_task_group() as group:

                    async def prompt() -> None:
                        response = await agent.prompt(prompt=[{"type": "text", "text": "touch"}], session_id=sid)
                        assert response.stop_reason == "cancelled"

                    group.start_soon(prompt)
                    await client.wait_for(lambda c: c.permission_requests)
                    await agent.cancel(session_id=sid)
                assert (
                    await agent.prompt(prompt=[{"type": "text", "text": "again"}], session_id=sid)
                ).stop_reason == "end_turn"
    assert ran == []
    assert results(model.requests[1])["t"] == "Cancelled by the user."


class WireClient(RecordingClient):
    """Over stdio: answers from a list, one per request; an exception becomes a JSON-RPC error."""

    def __init__(self, answers: list[Any]) -> None:
        super().__init__()
        self.answers = answers

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **_: Any) -> Any:
        self.permission_requests.append((tool_call, options))
        self._notify()
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        if answer == "hang":
            await anyio.sleep_forever()
        return answer


async def test_fail_closed_over_stdio(crow_home, tmp_path):
    write_config(crow_home, "[permissions]\ntimeout = 1\n")
    answers = [
        selected("allow_everything"),
        selected(""),
        RuntimeError("client broke"),
        {"outcome": {"outcome": "selected"}},  # no option id: malformed on the wire
        "hang",  # never answers: the permission timeout
        selected("allow_once"),
    ]
    script: list[Any] = []
    for n in range(6):
        script += [Reply(tool_calls=[ToolCall("echo__add", {"a": n, "b": 10}, id=f"c{n}")]), Reply(text="ok")]
    client = WireClient(answers)
    async with ScriptedModel(script) as model:
        async with run_crow(client, crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as (conn, _):
            with anyio.fail_after(60):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[echo_stdio()])).session_id
                for n in range(6):
                    assert (await conn.prompt(session_id=sid, prompt=[text(f"p{n}")])).stop_reason == "end_turn"
    told = [results(model.requests[2 * n + 1])[f"c{n}"] for n in range(6)]
    assert "did not offer" in told[0] and "did not offer" in told[1]
    assert "permission request failed" in told[2] and "permission request failed" in told[3]
    assert "No answer to the permission request within 1 s" in told[4]
    assert told[5] == "15"  # only the offered allow option ran the tool
