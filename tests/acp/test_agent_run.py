"""An agent in three concepts: AcpAgent(model, instructions=..., tools=[fn]), and agent.run() / run_sync(),
in process and without an editor. The loop, the store, the permission policy and MCP servers are real;
only the model's answers are scripted (FunctionModel)."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import anyio
import pytest
from support.helpers import echo_stdio

from crow.presets import default_agent
from crow_acp import AcpAgent, CrowCallbacks, FunctionModel, Refuse, RunError, RunResult, SessionAccess, tool
from crow_acp.config import Config
from crow_acp.events import Usage
from crow_acp.testing import Fault, Reply, ToolCall

pytestmark = pytest.mark.anyio


@tool(read_only=True)
def weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}."


def write_note(text: str) -> str:
    """Write a note (changes something, so it needs permission)."""
    NOTES.append(text)
    return "written"


NOTES: list[str] = []


def tool_results(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def assert_valid_chat(messages: list[dict[str, Any]]) -> None:
    """Every tool call the assistant made has its result before the next assistant or user message."""
    open_calls: set[str] = set()
    for message in messages:
        if message["role"] == "tool":
            open_calls.discard(message["tool_call_id"])
            continue
        assert not open_calls, f"tool calls without results before a {message['role']} message: {open_calls}"
        open_calls = {call["id"] for call in message.get("tool_calls") or []}
    assert not open_calls


async def test_a_tool_turn_answers_the_text_the_usage_and_the_messages_in_order(tmp_path):
    calls = [ToolCall("weather", {"city": "Oslo"})]
    model = FunctionModel(
        [
            Reply(tool_calls=calls, usage={"prompt_tokens": 10, "completion_tokens": 2}),
            Reply(text="It is sunny in Oslo.", usage={"prompt_tokens": 20, "completion_tokens": 5}),
        ]
    )
    agent = AcpAgent(model, instructions="Answer in one line.", tools=[weather], config=Config(home=tmp_path))
    result = await agent.run("Weather in Oslo?", cwd=str(tmp_path))
    await agent.shutdown()
    assert isinstance(result, RunResult)
    assert (result.text, result.stop_reason, result.usage) == ("It is sunny in Oslo.", "end_turn", Usage(30, 7))
    roles = [m["role"] for m in result.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert result.messages[0]["content"] == "Weather in Oslo?" and result.messages[2]["content"] == "Sunny in Oslo."
    assert model.requests[0]["messages"][0] == {"role": "system", "content": "Answer in one line."}
    assert [t["function"]["name"] for t in model.requests[0]["tools"]] == ["weather"]


async def test_a_session_id_continues_the_session_here_and_from_the_store(tmp_path):
    model = FunctionModel([Reply(text="Noted: blue."), Reply(text="Blue."), Reply(text="Still blue.")])
    agent = AcpAgent(model, config=Config(home=tmp_path))
    first = await agent.run("My colour is blue.", cwd=str(tmp_path))
    second = await agent.run("What is my colour?", session_id=first.session_id)
    await agent.shutdown()
    assert second.session_id == first.session_id and second.text == "Blue."
    assert [m["content"] for m in second.messages] == ["What is my colour?", "Blue."]
    seen = [m["content"] for m in model.requests[1]["messages"]]
    assert seen == ["My colour is blue.", "Noted: blue.", "What is my colour?"]
    again = AcpAgent(model, config=Config(home=tmp_path))  # a new process over the same store
    third = await again.run("And now?", cwd=str(tmp_path), session_id=first.session_id)
    await again.shutdown()
    assert third.text == "Still blue." and len(model.requests[2]["messages"]) == 5
    unknown = AcpAgent(model, config=Config(home=tmp_path))
    with pytest.raises(RunError, match="no session 'nope' in the store"):
        await unknown.run("hi", session_id="nope")
    await unknown.shutdown()


async def test_cancelling_the_task_answers_cancelled_and_keeps_the_history_valid(tmp_path):
    started = anyio.Event()

    @tool(read_only=True)
    async def slow(seconds: float) -> str:
        """Waits."""
        started.set()
        await anyio.sleep(seconds)
        return "slept"

    model = FunctionModel([Reply(tool_calls=[ToolCall("slow", {"seconds": 3600})]), Reply(text="Again, fine.")])
    agent = AcpAgent(model, tools=[slow], config=Config(home=tmp_path))
    with anyio.fail_after(30):
        task = asyncio.ensure_future(agent.run("wait", cwd=str(tmp_path)))
        await started.wait()
        task.cancel()
        cancelled = await task
        assert cancelled.stop_reason == "cancelled"
        assert_valid_chat(cancelled.messages)
        after = await agent.run("go on", session_id=cancelled.session_id)
    await agent.shutdown()
    assert after.stop_reason == "end_turn" and after.text == "Again, fine."
    assert_valid_chat(model.requests[-1]["messages"])


async def test_a_tool_needing_permission_is_refused_without_a_permissions_callback(tmp_path):
    NOTES.clear()
    model = FunctionModel([Reply(tool_calls=[ToolCall("write_note", {"text": "hi"})]), Reply(text="I could not.")])
    agent = AcpAgent(model, tools=[write_note], config=Config(home=tmp_path))
    result = await agent.run("note hi", cwd=str(tmp_path))
    await agent.shutdown()
    (refusal,) = tool_results(model.requests[1])
    assert refusal == "The tool 'write_note' needs permission, and no editor is attached to ask."
    assert NOTES == [] and result.stop_reason == "end_turn"


async def test_a_permissions_callback_decides_each_question(tmp_path):
    NOTES.clear()
    asked: list[Any] = []

    async def only_short_notes(call: Any) -> bool:
        asked.append((call.title, call.raw_input))
        return len(call.raw_input["text"]) < 5

    calls = [ToolCall("write_note", {"text": "hi"}), ToolCall("write_note", {"text": "a long note"})]
    model = FunctionModel([Reply(tool_calls=calls), Reply(text="Done.")])
    agent = AcpAgent(model, tools=[write_note], config=Config(home=tmp_path))
    await agent.run("notes", cwd=str(tmp_path), permissions=only_short_notes)
    await agent.shutdown()
    allowed, refused = tool_results(model.requests[1])
    assert allowed == "written" and refused == "The user rejected this tool call." and NOTES == ["hi"]
    assert sorted(asked, key=str) == [("write_note", {"text": "a long note"}), ("write_note", {"text": "hi"})]


async def test_a_permissions_callback_that_raises_refuses_the_call(tmp_path):
    NOTES.clear()

    def broken(call: Any) -> bool:
        raise RuntimeError("no")

    model = FunctionModel([Reply(tool_calls=[ToolCall("write_note", {"text": "hi"})]), Reply(text="Done.")])
    agent = AcpAgent(model, tools=[write_note], config=Config(home=tmp_path))
    await agent.run("note", cwd=str(tmp_path), permissions=broken)
    await agent.shutdown()
    assert tool_results(model.requests[1]) == ["The permission request failed (RuntimeError). The call was not run."]
    assert NOTES == []


async def test_run_sync_inside_a_running_event_loop_is_a_clear_error(tmp_path):
    agent = AcpAgent(FunctionModel([Reply(text="x")]), config=Config(home=tmp_path))
    with pytest.raises(RunError, match=r"cannot run inside a running event loop: use `await agent.run\(...\)`"):
        agent.run_sync("hi")
    with pytest.raises(RunError, match="takes the prompt as text, not list"):
        await agent.run([{"type": "text", "text": "hi"}])  # type: ignore[arg-type]
    missing = str(tmp_path / "missing")
    with pytest.raises(
        RunError, match=re.escape(f"agent.run(): Invalid params (cwd: {missing}, reason: does not exist)")
    ):
        await agent.run("hi", cwd=missing)
    await agent.shutdown()


def test_run_sync_runs_turns_each_in_its_own_loop_and_a_model_failure_is_its_error(tmp_path):
    model = FunctionModel([Reply(text="Hello."), Reply(text="Hello again."), Fault(400, "bad request")])
    agent = AcpAgent(model, config=Config(home=tmp_path))
    first = agent.run_sync("hi", cwd=str(tmp_path))
    second = agent.run_sync("again", session_id=first.session_id)  # shut down between: back from the store
    assert (first.text, second.text) == ("Hello.", "Hello again.")
    assert [m["content"] for m in model.requests[1]["messages"]] == ["hi", "Hello.", "again"]
    failed = "agent.run(): the turn failed: The model endpoint (function model) answered HTTP 400: bad request"
    with pytest.raises(RunError, match=re.escape(failed)):
        agent.run_sync("once more", cwd=str(tmp_path))


async def test_instructions_follow_the_default_prompt_and_a_callable_is_asked_before_each_call(tmp_path):
    asked: list[str] = []

    def today(session: SessionAccess) -> str:
        asked.append(session.session_id)
        return f"Call {len(asked)}: be brief."

    model = FunctionModel([Reply(tool_calls=[ToolCall("weather", {"city": "Oslo"})]), Reply(text="Sunny.")])
    agent = default_agent(model, instructions=today, tools=[weather], config=Config(home=tmp_path / "home"))
    result = await agent.run("weather", cwd=str(tmp_path))
    await agent.shutdown()
    first, second = (request["messages"][0]["content"] for request in model.requests)
    assert first.endswith("\n\nCall 2: be brief.") and second.endswith("\n\nCall 3: be brief.")
    assert "Call 2" not in second and len(first) > 100  # replaced, not piled up, after crow's own prompt
    names = [t["function"]["name"] for t in model.requests[0]["tools"]]
    assert "weather" in names and "read_file" in names and result.text == "Sunny."


async def test_set_callbacks_keeps_the_agents_tools_and_instructions(tmp_path):
    async def no_oslo(session: SessionAccess, *, call: Any, **kwargs: Any) -> Refuse | None:
        return Refuse("Not Oslo.") if call.arguments.get("city") == "Oslo" else None

    model = FunctionModel([Reply(tool_calls=[ToolCall("weather", {"city": "Oslo"})]), Reply(text="ok")])
    agent = AcpAgent(model, instructions="Be kind.", tools=[weather], config=Config(home=tmp_path))
    agent.set_callbacks(agent.callbacks + CrowCallbacks(before_tool=[no_oslo]))
    agent.set_callbacks(agent.callbacks + CrowCallbacks())  # twice: nothing doubles
    await agent.run("weather", cwd=str(tmp_path))
    await agent.shutdown()
    assert len(agent.callbacks.begin_session) == 2 and len(agent.callbacks.pre_request) == 1
    assert model.requests[0]["messages"][0]["content"] == "Be kind."
    assert tool_results(model.requests[1]) == ["Not Oslo."]


async def test_mcp_servers_in_acps_shape_and_a_model_id(tmp_path):
    model = FunctionModel([Reply(tool_calls=[ToolCall("echo__echo", {"text": "hey"})]), Reply(text="ok")])
    server = echo_stdio().model_dump(mode="json")  # a dict works as the ACP model does
    agent = AcpAgent(model, mcp_servers=[server], config=Config(home=tmp_path))
    with anyio.fail_after(60):
        await agent.run("echo", cwd=str(tmp_path))
    await agent.shutdown()
    assert tool_results(model.requests[1]) == ["echo: hey"]
    by_id = AcpAgent("gpt-5-mini", config=Config(home=tmp_path))
    assert by_id.config.model == "gpt-5-mini" and by_id.model.profile.model == "gpt-5-mini"
    with pytest.raises(Exception, match="not an ACP MCP server"):
        AcpAgent(mcp_servers=[{"name": "x"}], config=Config(home=tmp_path))
