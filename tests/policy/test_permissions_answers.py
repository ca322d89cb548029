"""Permissions fail closed: only an allow option crow offered in that very request runs the call.
Every other answer (unknown or empty id, malformed, a client error, no answer in time, a cancel)
refuses it and tells the model why; in process with hostile clients, and over ACP stdio."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse
from support.helpers import (
    CORE_AGENT,
    RecordingClient,
    crow_env,
    echo_stdio,
    in_process,
    run_crow,
    text,
    write_config,
)
from support.records import results

from crow_acp import AcpAgent, CrowCallbacks, FunctionTool, load_config
from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio


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
