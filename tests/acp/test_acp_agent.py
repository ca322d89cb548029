"""`crow acp` as an editor sees it: capabilities, streaming, stop reasons, model errors, prompt content."""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
import pytest
from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process
from acp.schema import (
    ClientCapabilities,
    EmbeddedResourceContentBlock,
    Implementation,
    ResourceContentBlock,
    TextResourceContents,
)
from support.helpers import CORE_AGENT, RecordingClient, crow_env, text, write_config
from support.hosted import hosted_crow

from crow_acp.testing import Fault, Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio


def core(client: RecordingClient, env: dict[str, str]) -> Any:
    """`crow acp` serving the bare core (hosted in process), so the model requests are exactly what the core sends."""
    return hosted_crow(client, env, "--agent", CORE_AGENT)


async def test_initialize_advertises_what_crow_implements(crow_home, tmp_path):
    write_config(crow_home, "max_retries = 0\n")
    client = RecordingClient()
    env = crow_env(crow_home, "http://127.0.0.1:9/v1")  # nothing listens there
    command = [sys.executable, "-m", "crow", "acp"]  # exec'd: the cold start is part of what this test sees
    with anyio.fail_after(60):  # generous: a cold start on a loaded machine took over 20 s
        async with spawn_agent_process(client, *command, env=env, transport_kwargs={"stderr": None}) as (conn, _):
            init = await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(),
                client_info=Implementation(name="t", version="0"),
            )
            caps = init.agent_capabilities
            assert init.protocol_version == PROTOCOL_VERSION
            assert caps.load_session is True
            assert caps.mcp_capabilities.http is True and caps.mcp_capabilities.sse is True
            assert caps.prompt_capabilities.embedded_context is True
            sessions = caps.session_capabilities
            assert sessions.list is not None and sessions.close is not None and sessions.resume is not None
            assert sessions.additional_directories is not None
            assert init.agent_info.name == "crow"

            # close and resume are routed (they need the SDK's unstable flag), and do what they say.
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            listed = await conn.list_sessions(cwd=str(tmp_path))
            assert listed.sessions == [], "a session that never got a prompt is not listed"
            await conn.close_session(session_id=sid)
            with pytest.raises(RequestError):
                await conn.prompt(session_id=sid, prompt=[text("after close")])
            await conn.resume_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
            with pytest.raises(RequestError) as after_resume:  # the session is back: the prompt reaches the model
                await conn.prompt(session_id=sid, prompt=[text("after resume")])
            assert "Could not reach the model endpoint" in str(after_resume.value)
            listed = await conn.list_sessions(cwd=str(tmp_path))
            assert [s.session_id for s in listed.sessions] == [sid], "listed once it got a prompt"

            # an unknown session is an error (resource not found), never an empty success
            for request in (
                conn.resume_session(cwd=str(tmp_path), session_id="no-such-session", mcp_servers=[]),
                conn.load_session(cwd=str(tmp_path), session_id="no-such-session", mcp_servers=[]),
                conn.prompt(session_id="no-such-session", prompt=[text("hi")]),
            ):
                with pytest.raises(RequestError) as unknown:
                    await request
                assert unknown.value.code == -32002


async def test_streaming_updates_usage_and_title(crow_home, tmp_path):
    script = [
        Reply(text="Hello there, streaming world!", reasoning="Let me think about it.", chunks=5),
        Reply(text="Calling a tool.", tool_calls=[ToolCall("missing_tool", {"x": 1})]),
        Reply(text="Second message."),
    ]
    client = RecordingClient()
    async with ScriptedModel(script) as model, core(client, crow_env(crow_home, model.base_url)) as (conn, _):
        with anyio.fail_after(20):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            first = await conn.prompt(session_id=sid, prompt=[text("  Tell me\n something   nice  ")])
            assert first.stop_reason == "end_turn"
            chunks = client.of("agent_message_chunk")
            assert len(chunks) == 5 and client.text() == "Hello there, streaming world!"
            thoughts = client.of("agent_thought_chunk")
            assert len(thoughts) >= 2 and "".join(t.content.text for t in thoughts) == "Let me think about it."
            assert len({c.message_id for c in chunks}) == 1 and chunks[0].message_id
            assert client.kinds().index("agent_thought_chunk") < client.kinds().index("agent_message_chunk")
            usage = client.of("usage_update")
            assert len(usage) == 1 and usage[0].used > 0 and usage[0].size == 128_000
            assert client.kinds()[-2:] == ["usage_update", "session_info_update"]
            assert client.of("session_info_update")[0].title == "Tell me something nice"

            client.updates.clear()
            second = await conn.prompt(session_id=sid, prompt=[text("again")])
            assert second.stop_reason == "end_turn"
            # two model calls: two usage updates, one after each call; two assistant messages, two ids
            kinds = client.kinds()
            assert kinds.count("usage_update") == 2
            assert kinds.index("usage_update") < kinds.index("tool_call")
            ids = [c.message_id for c in client.of("agent_message_chunk")]
            assert len(set(ids)) == 2 and ids == sorted(ids, key=ids.index)
            assert client.of("session_info_update") == []  # the title is set once
            failed = client.of("tool_call_update")[-1]
            assert failed.status == "failed" and "Unknown tool 'missing_tool'" in failed.content[0].content.text

        # the model saw the whole conversation, with the tool result after its call
        roles = [m["role"] for m in model.requests[-1]["messages"]]
        assert roles == ["user", "assistant", "user", "assistant", "tool"]
        assert model.requests[-1]["messages"][0]["content"] == "  Tell me\n something   nice  "
        listed = await conn.list_sessions()
        assert listed.sessions[0].title == "Tell me something nice"


async def test_stop_reasons(crow_home, tmp_path):
    write_config(crow_home, "max_steps = 2\n")
    script = [
        Reply(text="done"),
        Reply(text="this reply is cut by the token limit", finish_reason="length"),
    ]
    always_tool = Reply(tool_calls=[ToolCall("loop_tool", {})])
    client = RecordingClient()
    async with ScriptedModel(script, default=always_tool) as model:
        async with core(client, crow_env(crow_home, model.base_url)) as (conn, _):
            with anyio.fail_after(20):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                stops = [(await conn.prompt(session_id=sid, prompt=[text(p)])).stop_reason for p in "abc"]
        assert stops == ["end_turn", "max_tokens", "max_turn_requests"]
        assert len(model.requests) == 4  # 1 + 1 + max_steps


async def test_model_errors_become_readable_json_rpc_errors(crow_home, tmp_path):
    write_config(crow_home, "max_retries = 1\n")
    script = [
        Fault(500, "upstream exploded"),
        Fault(500, "upstream exploded"),  # the one retry fails too
        Fault(401, "bad key"),
        Fault(cut_after=3, reply=Reply(text="a reply that will never finish")),
        Fault(429, "slow down", retry_after=0.05),
        Reply(text="recovered"),
    ]
    client = RecordingClient()
    async with ScriptedModel(script) as model, core(client, crow_env(crow_home, model.base_url)) as (conn, _):
        with anyio.fail_after(30):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id

            with pytest.raises(RequestError) as server_error:
                await conn.prompt(session_id=sid, prompt=[text("one")])
            assert len(model.requests) == 2
            assert "HTTP 500" in str(server_error.value) and "upstream exploded" in str(server_error.value)

            with pytest.raises(RequestError) as auth_error:
                await conn.prompt(session_id=sid, prompt=[text("two")])
            assert len(model.requests) == 3  # a 401 is never retried
            assert "401" in str(auth_error.value) and "OPENAI_API_KEY" in str(auth_error.value)

            with pytest.raises(RequestError) as cut:
                await conn.prompt(session_id=sid, prompt=[text("three")])
            assert "cut off" in str(cut.value)
            assert "Internal error" not in str(cut.value)

            done = await conn.prompt(session_id=sid, prompt=[text("four")])
            assert done.stop_reason == "end_turn" and client.text().endswith("recovered")
        assert len(model.requests) == 6  # 429, then the retry that succeeded
        # the failed turns left a history the model still accepts
        assert [m["role"] for m in model.requests[-1]["messages"]].count("user") == 4


async def test_missing_api_key_names_the_variable(crow_home, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CROW_"))}
    env["CROW_HOME"] = str(crow_home)
    async with core(RecordingClient(), env) as (conn, _):
        with anyio.fail_after(20):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            with pytest.raises(RequestError) as error:
                await conn.prompt(session_id=sid, prompt=[text("hi")])
    assert "OPENAI_API_KEY" in str(error.value)


async def test_embedded_resources_and_file_links_reach_the_model(crow_home, tmp_path):
    linked = tmp_path / "notes.txt"
    linked.write_text("LINKED-FILE-CONTENT")
    prompt = [
        text("Look at these"),
        EmbeddedResourceContentBlock(
            type="resource",
            # an unsaved buffer inside the session's roots (one outside them is left out: test_prompt_links.py)
            resource=TextResourceContents(
                uri=(tmp_path / "buffer.py").as_uri(), text="EMBEDDED-BUFFER", mime_type="text/plain"
            ),
        ),
        ResourceContentBlock(type="resource_link", name="notes.txt", uri=linked.as_uri()),
    ]
    client = RecordingClient()
    async with (
        ScriptedModel([Reply(text="seen")]) as model,
        core(client, crow_env(crow_home, model.base_url)) as (conn, _),
    ):
        with anyio.fail_after(20):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            assert (await conn.prompt(session_id=sid, prompt=prompt)).stop_reason == "end_turn"
    user = model.requests[0]["messages"][-1]
    assert user["role"] == "user"
    assert "Look at these" in user["content"]
    assert "EMBEDDED-BUFFER" in user["content"] and (tmp_path / "buffer.py").as_uri() in user["content"]
    assert "LINKED-FILE-CONTENT" in user["content"] and linked.as_uri() in user["content"]


async def test_prompts_serialize_per_session_and_run_concurrently_across_sessions(crow_home, tmp_path):
    both_waiting: dict[str, anyio.Event] = {}

    async def respond(request: dict) -> Reply:
        last = request["messages"][-1]["content"]
        if last.startswith("cross"):
            # each cross-session request waits until the other one arrived: serialized sessions would deadlock
            event = both_waiting.setdefault("cross", anyio.Event())
            if len([r for r in model.requests if r["messages"][-1]["content"].startswith("cross")]) == 2:
                event.set()
            await event.wait()
            return Reply(text=f"answer to {last}")
        return Reply(text=f"answer to {last}", delay=0.02)

    client = RecordingClient()
    async with ScriptedModel(default=respond) as model:
        async with core(client, crow_env(crow_home, model.base_url)) as (conn, _):
            with anyio.fail_after(20):
                a = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                b = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                results: dict[str, str] = {}

                async def ask(sid: str, words: str) -> None:
                    results[words] = (await conn.prompt(session_id=sid, prompt=[text(words)])).stop_reason

                async with anyio.create_task_group() as group:
                    group.start_soon(ask, a, "first")
                    group.start_soon(ask, a, "second")
                assert results == {"first": "end_turn", "second": "end_turn"}
                # the later prompt's request carries the earlier prompt's complete exchange
                later = model.requests[1]["messages"]
                assert [m["role"] for m in later] == ["user", "assistant", "user"]
                assert later[1]["content"] == f"answer to {later[0]['content']}"

                async with anyio.create_task_group() as group:
                    group.start_soon(ask, a, "cross a")
                    group.start_soon(ask, b, "cross b")
                assert results["cross a"] == results["cross b"] == "end_turn"
