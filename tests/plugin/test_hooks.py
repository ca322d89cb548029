"""The four hook lists, in process (the agents of tests/agents/hook_agent.py, each with a FunctionModel).
Only what needs the wire runs `crow acp --agent file.py:factory` over stdio. Observers, slash commands
and the keywords a callback gets are tests/plugin/test_observers_commands.py."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import RequestError
from support.helpers import HOOK_AGENT, RecordingClient, crow_env, in_process, run_crow, text
from support.records import read_log

from crow.agent_loader import load_agent
from crow_acp import AcpAgent
from crow_acp.core.session import SUMMARY_ACK, SUMMARY_PREFIX
from crow_acp.testing import Fault, Reply, ScriptedModel, ToolCall
from crow_acp.testing.function_model import FunctionModel

pytestmark = pytest.mark.anyio


def hook_agent(factory: str) -> tuple[str, str]:
    return "--agent", f"{HOOK_AGENT}:{factory}"


def user_texts(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


@pytest.fixture
def log(crow_home, tmp_path, monkeypatch) -> Path:
    """The hook log the agents of hook_agent.py write; they find their home in CROW_HOME."""
    path = tmp_path / "hooks.jsonl"
    monkeypatch.setenv("CROW_HOME", str(crow_home))
    monkeypatch.setenv("HOOK_LOG", str(path))
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    return path


@asynccontextmanager
async def served(factory: str, model: FunctionModel, client: Any = None) -> AsyncIterator[AcpAgent]:
    """A hook_agent.py agent in this process, as `crow acp --agent` would serve it, with `client` as the editor."""
    agent = load_agent(f"{HOOK_AGENT}:{factory}", None)
    model.install(agent)
    if client is not None:
        agent.on_connect(client)
    async with in_process(agent):
        yield agent


async def test_hooks_fire_in_order_across_turns_cancel_error_and_reload(log, tmp_path):
    script = [
        Reply(text="calling", tool_calls=[ToolCall("nothing", {})]),
        Reply(text="done"),
        Reply(text="long " * 200, chunks=200, delay=0.03),
        Fault(400, "the request was bad"),
        Reply(text="after reload"),
    ]
    client, model = RecordingClient(), FunctionModel(script)
    async with served("build", model, client) as conn:
        with anyio.fail_after(30):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            assert (await conn.prompt(session_id=sid, prompt=[text("one")])).stop_reason == "end_turn"

            async with anyio.create_task_group() as group:

                async def cancelled_prompt() -> None:
                    response = await conn.prompt(session_id=sid, prompt=[text("two")])
                    assert response.stop_reason == "cancelled"

                group.start_soon(cancelled_prompt)
                await client.wait_for(lambda c: len(c.of("agent_message_chunk")) > 5)
                await conn.cancel(session_id=sid)

            with pytest.raises(RequestError):
                await conn.prompt(session_id=sid, prompt=[text("three")])
            other = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id

    async with served("build", model, RecordingClient()) as conn:  # a new agent on the same store
        with anyio.fail_after(30):
            await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
            assert (await conn.prompt(session_id=sid, prompt=[text("four")])).stop_reason == "end_turn"

    entries = read_log(log)
    names = {sid: "A", other: "B"}

    def brief(entry: dict[str, Any]) -> tuple:
        extra = {
            "begin_session": ("loaded",),
            "pre_request": ("step",),
            "post_response": ("step", "finish"),
            "end_turn": ("stop_reason",),
        }[entry["hook"]]
        return (entry["hook"], names[entry["session"]], *(entry[key] for key in extra))

    assert [brief(e) for e in entries] == [
        ("begin_session", "A", False),
        # one: a tool call, then the answer
        ("pre_request", "A", 0),
        ("post_response", "A", 0, "tool_calls"),
        ("pre_request", "A", 1),
        ("post_response", "A", 1, "stop"),
        ("end_turn", "A", "end_turn"),
        # two: cancelled mid-stream (no response to post-process)
        ("pre_request", "A", 0),
        ("end_turn", "A", "cancelled"),
        # three: the model call failed
        ("pre_request", "A", 0),
        ("end_turn", "A", "error"),
        ("begin_session", "B", False),
        # after a restart
        ("begin_session", "A", True),
        ("pre_request", "A", 0),
        ("post_response", "A", 0, "stop"),
        ("end_turn", "A", "end_turn"),
    ]
    post = [e for e in entries if e["hook"] == "post_response"]
    assert post[0]["content"] == "calling" and post[1]["content"] == "done"
    assert all(e["usage"]["prompt"] > 0 and e["usage"]["completion"] > 0 for e in post)
    ends = [e for e in entries if e["hook"] == "end_turn"]
    assert [e["error"] is None for e in ends] == [True, True, False, True]
    assert "the request was bad" in ends[2]["error"]


async def test_a_raising_callback_is_reported_and_the_turn_goes_on(log, tmp_path, caplog):
    client = RecordingClient()
    caplog.set_level(logging.ERROR, logger="crow_acp.core.hooks")
    async with served("build_raising", FunctionModel([Reply(text="still answered")]), client) as conn:
        with anyio.fail_after(30):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            assert (await conn.prompt(session_id=sid, prompt=[text("hi")])).stop_reason == "end_turn"
    assert client.text() == "still answered"
    reports = [u for u in client.of("tool_call") if u.title.startswith("Callback") and u.status == "failed"]
    assert len(reports) == 1 and "broken" in reports[0].title
    assert reports[0].content[0].content.text == "RuntimeError: broken hook"
    # the callbacks after the broken one still ran
    assert [e["hook"] for e in read_log(log)] == ["begin_session", "pre_request", "post_response", "end_turn"]
    failure = next(r for r in caplog.records if "broken failed" in r.getMessage())
    assert failure.exc_info is not None and str(failure.exc_info[1]) == "broken hook"  # with its traceback


async def test_session_writes_reach_the_model_and_survive_a_restart(log, tmp_path):
    script = [Reply(text="first answer"), Reply(text="side answer"), Reply(text="second answer"), Reply(text="side 2")]
    model = FunctionModel(script)
    async with served("build_mutating", model) as conn:
        with anyio.fail_after(30):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            assert (await conn.prompt(session_id=sid, prompt=[text("hello")])).stop_reason == "end_turn"
    async with served("build_mutating", model) as conn:
        with anyio.fail_after(30):
            await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
            assert (await conn.prompt(session_id=sid, prompt=[text("again")])).stop_reason == "end_turn"

    first, side, second, _ = model.requests
    assert user_texts(first) == ["hello", "NOTE begins=1"]  # add_message before the call is what the call sees
    # the side call: only its own message, no tools, no stream; the history is left alone
    assert side["messages"] == [{"role": "user", "content": "SIDE: summarize"}] and not side.get("stream")
    sides = [e for e in read_log(log) if e["hook"] == "side_prompt"]
    assert [(e["answer"], e["unchanged"]) for e in sides] == [("side answer", True), ("side 2", True)]
    # after the restart: the added note and the context were persisted; the side prompt never entered history
    assert user_texts(second) == ["hello", "NOTE begins=1", "again", "NOTE begins=2"]
    assert [m["content"] for m in second["messages"] if m["role"] == "assistant"] == ["first answer"]


async def test_compaction_is_what_the_next_call_sees_and_is_persisted(log, tmp_path):
    model = FunctionModel([Reply(text=f"a{n}") for n in range(1, 5)])
    replay = RecordingClient()
    async with served("build_compacting", model) as conn:
        with anyio.fail_after(30):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            for words in ("p1", "p2", "p3"):
                assert (await conn.prompt(session_id=sid, prompt=[text(words)])).stop_reason == "end_turn"
    async with served("build_compacting", model, replay) as conn:
        with anyio.fail_after(30):
            await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
            assert (await conn.prompt(session_id=sid, prompt=[text("p4")])).stop_reason == "end_turn"

    summary = SUMMARY_PREFIX + "SUMMARY-OF-EARLIER"
    assert user_texts(model.requests[1]) == ["p1", "p2"]
    assert [m["content"] for m in model.requests[2]["messages"]] == [summary, SUMMARY_ACK, "p3"]
    assert [e["replaced"] for e in read_log(log) if e["hook"] == "compacted"] == [4]
    # after a restart the model still sees the compacted history...
    assert [m["content"] for m in model.requests[3]["messages"]] == [summary, SUMMARY_ACK, "p3", "a3", "p4"]
    # ...and the editor still sees everything that was said, with a marker where it was compacted
    replayed = [(u.session_update, getattr(u, "title", None) or u.content.text) for u in replay.updates[:7]]
    assert replayed == [
        ("user_message_chunk", "p1"),
        ("agent_message_chunk", "a1"),
        ("user_message_chunk", "p2"),
        ("agent_message_chunk", "a2"),
        ("user_message_chunk", "p3"),
        ("tool_call", "Context compacted"),  # it ran before the model answered p3
        ("agent_message_chunk", "a3"),
    ]


async def test_print_in_a_callback_does_not_corrupt_the_protocol(crow_home, tmp_path):
    client = RecordingClient()
    async with ScriptedModel([Reply(text="clean answer")]) as model:
        env = crow_env(crow_home, model.base_url, HOOK_LOG=str(tmp_path / "hooks.jsonl"))
        async with run_crow(client, env, *hook_agent("build_printing")) as (conn, _):
            with anyio.fail_after(30):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                assert (await conn.prompt(session_id=sid, prompt=[text("hi")])).stop_reason == "end_turn"
                assert (await conn.list_sessions()).sessions[0].session_id == sid
    assert client.text() == "clean answer"
