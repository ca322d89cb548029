"""FunctionModel: the in-process model seam drives the real loop (tools, hooks, store) without HTTP."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from acp import RequestError

from crow_acp import AcpAgent, CrowCallbacks, FunctionTool
from crow_acp.config import Config, ModelProfile
from crow_acp.errors import ModelError
from crow_acp.events import TextDelta, ThoughtDelta, Usage
from crow_acp.model.client import Finish, ModelClient, ReasoningChunk, TextChunk, ToolCallChunk
from crow_acp.testing import Fault, Reply, ToolCall
from crow_acp.testing.function_model import FunctionModel

pytestmark = pytest.mark.anyio


def prompt(text: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": text}]


def shout_tool(seen: list[dict]) -> FunctionTool:
    async def shout(arguments: dict[str, Any], context: Any) -> str:
        seen.append(arguments)
        return arguments["text"].upper()

    return FunctionTool(
        "shout", "Shout.", {"type": "object", "properties": {"text": {"type": "string"}}}, shout, read_only=True
    )


async def collect(model: ModelClient, messages: list[dict]) -> list[Any]:
    return [delta async for delta in model.stream(messages, [])]


async def test_a_reply_streams_as_a_server_would_with_split_tool_arguments():
    model = FunctionModel(
        [Reply(text="hello there", reasoning="thinking", tool_calls=[ToolCall("f", {"path": "a" * 40})])]
    )
    deltas = await collect(model, [{"role": "user", "content": "hi"}])
    assert "".join(d.text for d in deltas if isinstance(d, ReasoningChunk)) == "thinking"
    assert len([d for d in deltas if isinstance(d, TextChunk)]) > 1
    calls = [d for d in deltas if isinstance(d, ToolCallChunk)]
    assert calls[0].name == "f" and calls[0].id == "call_1" and all(c.name is None for c in calls[1:])
    assert len(calls) >= 4, "arguments arrive in several fragments"
    assert "".join(c.arguments for c in calls) == '{"path": "' + "a" * 40 + '"}'
    assert isinstance(deltas[-2], Usage) and deltas[-1] == Finish("tool_calls")
    assert model.requests == [
        {"model": "function-model", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    ]


async def test_faults_cut_offs_and_generators_behave_like_the_http_client():
    async def generator(request: dict) -> Any:
        yield "partial"  # no Finish: the stream was cut off

    model = FunctionModel([Fault(503, "overloaded"), Fault(cut_after=2, reply=Reply(text="abcdefgh")), generator])
    with pytest.raises(ModelError, match="HTTP 503: overloaded"):
        await collect(model, [])
    with pytest.raises(ModelError, match="cut off"):
        await collect(model, [])
    with pytest.raises(ModelError, match="cut off"):
        await collect(model, [])
    with pytest.raises(ModelError, match="script exhausted"):
        await collect(model, [])
    assert await FunctionModel(default=Reply(text="side")).complete([{"role": "user", "content": "q"}]) == "side"


async def test_the_loop_runs_in_process_with_tools_hooks_and_the_store(tmp_path):
    seen: list[dict] = []
    tool = shout_tool(seen)

    async def answer(request: dict) -> Any:
        """A responder: the second call sees the tool's result and answers from it."""
        result = request["messages"][-1]
        yield ReasoningChunk("the tool said ")
        yield f"It said {result['content']}."
        yield Finish("stop")

    model = FunctionModel([Reply(text="Shouting.", tool_calls=[ToolCall("shout", {"text": "hi"}, id="c1")]), answer])
    hooks: list[tuple[str, Any]] = []
    callbacks = CrowCallbacks(
        begin_session=[lambda session, **_: session.add_tool(tool)],
        post_response=[lambda session, *, finish_reason, **_: hooks.append(("post_response", finish_reason))],
        end_turn=[lambda session, *, stop_reason, **_: hooks.append(("end_turn", stop_reason))],
    )
    agent = AcpAgent(Config(home=tmp_path, models={"m": ModelProfile(model="m", context_window=1000)}, model="m"))
    agent.set_callbacks(callbacks)
    model.install(agent)
    events: list[Any] = []
    agent.add_observer(events.append)
    with anyio.fail_after(20):
        sid = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        assert (await agent.prompt(prompt=prompt("shout hi"), session_id=sid)).stop_reason == "end_turn"
    assert seen == [{"text": "hi"}]
    assert hooks == [("post_response", "tool_calls"), ("post_response", "stop"), ("end_turn", "end_turn")]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Shouting.It said HI."
    assert "".join(e.text for e in events if isinstance(e, ThoughtDelta)) == "the tool said "
    assert [m["role"] for m in model.requests[1]["messages"]] == ["user", "assistant", "tool"]
    assert model.requests[1]["tools"][0]["function"]["name"] == "shout"
    stored = [(e.message["role"], e.meta.kind) for e in await agent.store.load(sid)]
    assert stored == [("user", "prompt"), ("assistant", "message"), ("tool", "message"), ("assistant", "message")]
    await agent.shutdown()


async def test_a_hanging_model_is_cancelled_and_a_fault_is_the_prompts_error(tmp_path):
    asked = anyio.Event()

    def hang_once_asked(request: dict) -> Fault:
        asked.set()
        return Fault(hang=True)

    model = FunctionModel([hang_once_asked, Fault(400, "bad request")])
    agent = AcpAgent(Config(home=tmp_path))
    model.install(agent)
    sid = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
    with anyio.fail_after(20):
        async with anyio.create_task_group() as group:

            async def hang() -> None:
                assert (await agent.prompt(prompt=prompt("wait"), session_id=sid)).stop_reason == "cancelled"

            group.start_soon(hang)
            await asked.wait()
            await agent.cancel(session_id=sid)
        with pytest.raises(RequestError, match="bad request"):
            await agent.prompt(prompt=prompt("again"), session_id=sid)
    await agent.shutdown()
