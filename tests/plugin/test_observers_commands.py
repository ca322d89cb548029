"""Observers (typed events), slash commands carried by a callback, and the keywords a callback gets:
an AcpAgent in process with a FunctionModel and a RecordingClient as the editor."""

from __future__ import annotations

from typing import Any, ClassVar

import anyio
import pytest
from acp import RequestError
from support.helpers import RecordingClient, in_process, text, write_config

from crow_acp import AcpAgent, CrowCallbacks, FunctionTool, SlashCommand, load_config
from crow_acp.events import (
    ErrorOccurred,
    ModelCallFinished,
    TextDelta,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
    TurnFinished,
)
from crow_acp.testing import Fault, Reply, ScriptedModel, ToolCall
from crow_acp.testing.function_model import FunctionModel

pytestmark = pytest.mark.anyio


async def test_observers_receive_typed_events_in_process(crow_home, tmp_path, monkeypatch):
    async def shout(arguments: dict[str, Any], context: Any) -> str:
        return arguments["text"].upper()

    tool = FunctionTool(
        "shout", "Shout.", {"type": "object", "properties": {"text": {"type": "string"}}}, shout, read_only=True
    )
    script = [
        Reply(text="Let me shout.", tool_calls=[ToolCall("shout", {"text": "hi"}, id="c1")]),
        Reply(text="Shouted."),
        Fault(500, "down"),
    ]
    events: list[Any] = []

    def broken_observer(event: Any) -> None:
        raise RuntimeError("observers may fail without stopping the turn")

    async with ScriptedModel(script) as model:
        monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        write_config(crow_home, "max_retries = 0\n")
        async with in_process(AcpAgent(load_config(home=crow_home))) as agent:
            agent.set_callbacks(CrowCallbacks(begin_session=[lambda session, **_: session.add_tool(tool)]))
            agent.add_observer(broken_observer)
            agent.add_observer(events.append)
            with anyio.fail_after(20):
                sid = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                response = await agent.prompt(prompt=[{"type": "text", "text": "shout hi"}], session_id=sid)
                assert response.stop_reason == "end_turn"
                with pytest.raises(RequestError):
                    await agent.prompt(prompt=[{"type": "text", "text": "fail"}], session_id=sid)

    kinds = [type(e).__name__ for e in events]
    first_turn = kinds[: kinds.index("TitleChanged") + 1]
    collapsed = [k for i, k in enumerate(first_turn) if i == 0 or k != first_turn[i - 1]]
    assert collapsed == [
        "TextDelta",
        "ModelCallFinished",
        "ToolCallStarted",
        "ToolCallRunning",
        "ToolCallFinished",
        "TextDelta",
        "ModelCallFinished",
        "TurnFinished",
        "TitleChanged",
    ]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Let me shout.Shouted."
    started = next(e for e in events if isinstance(e, ToolCallStarted))
    assert (started.call_id, started.name, started.arguments) == ("c1", "shout", {"text": "hi"})
    finished = next(e for e in events if isinstance(e, ToolCallFinished))
    assert finished.result.text == "HI" and finished.status == "completed"
    assert any(isinstance(e, ToolCallRunning) for e in events)
    assert all(e.usage.total_tokens > 0 for e in events if isinstance(e, ModelCallFinished))
    error = next(e for e in events if isinstance(e, ErrorOccurred))
    assert "HTTP 500" in error.message
    assert [e.stop_reason for e in events if isinstance(e, TurnFinished)] == ["end_turn", "end_turn"]
    assert kinds[-2:] == ["ErrorOccurred", "TurnFinished"]


async def test_slash_commands_carried_by_a_callback(crow_home, tmp_path):
    """In process, with a RecordingClient standing in for the editor connection."""
    started = anyio.Event()

    async def greet(session: Any, argument: str) -> str:
        return f"Hello, {argument}!"

    async def wait(session: Any, argument: str) -> str:
        started.set()
        await anyio.sleep_forever()
        return "never"

    class Greeter:
        commands: ClassVar[list[SlashCommand]] = [
            SlashCommand("hello", "Greets", greet, hint="name"),
            SlashCommand("wait", "Waits", wait),
        ]

        async def __call__(self, session: Any, **_: Any) -> None:
            pass

    client = RecordingClient()
    async with in_process(AcpAgent(load_config(home=crow_home))) as agent:
        agent.on_connect(client)
        agent.set_callbacks(CrowCallbacks(begin_session=[Greeter()]))
        with anyio.fail_after(10):
            sid = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await client.wait_for(lambda c: c.of("available_commands_update"))
            offered = client.of("available_commands_update")[0].available_commands
            hints = [(c.name, c.input.root.hint if c.input else None) for c in offered]
            assert hints[:2] == [("hello", "name"), ("wait", None)] and hints[2][0] == "mode"

            response = await agent.prompt(prompt=[{"type": "text", "text": "/hello big\nworld"}], session_id=sid)
            assert response.stop_reason == "end_turn" and client.text() == "Hello, big\nworld!"

            async with anyio.create_task_group() as group:

                async def waiting() -> None:
                    response = await agent.prompt(prompt=[{"type": "text", "text": "/wait"}], session_id=sid)
                    assert response.stop_reason == "cancelled"

                group.start_soon(waiting)
                await started.wait()
                await agent.cancel(session_id=sid)
    assert client.text() == "Hello, big\nworld!"  # the cancelled command showed nothing


async def test_callbacks_get_only_the_keywords_they_name(crow_home, tmp_path):
    seen: list[tuple[str, object]] = []

    def bare(session):  # no kwargs at all, in every list
        seen.append(("bare", bool(session.session_id)))

    async def named(session, *, stop_reason):  # only what it asks for
        seen.append(("named", stop_reason))

    class Counter:  # a callable object, unhashable because it compares by value
        __hash__ = None  # type: ignore[assignment]

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Counter)

        def __call__(self, session, *, step):
            seen.append(("counter", step))

    callbacks = CrowCallbacks(begin_session=[bare], pre_request=[Counter()], end_turn=[bare, named])
    agent = AcpAgent(load_config(home=crow_home))
    agent.set_callbacks(callbacks)
    FunctionModel([Reply(text="ok")]).install(agent)
    client = RecordingClient()
    agent.on_connect(client)
    async with in_process(agent) as conn:
        with anyio.fail_after(30):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            assert (await conn.prompt(session_id=sid, prompt=[text("hi")])).stop_reason == "end_turn"
    assert seen == [("bare", True), ("counter", 0), ("bare", True), ("named", "end_turn")]
    assert not [u for u in client.of("tool_call") if u.title.startswith("Callback")]  # nothing failed
