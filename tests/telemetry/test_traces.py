"""Traces: a real OTLP/HTTP receiver gets one trace per turn, with the GenAI conventions' spans, their
parent-child links and attributes, from `crow acp` (and `crow serve`, and a MultiAgent's members);
no key, and no prompt text or tool arguments unless the operator opted in."""

from __future__ import annotations

import json

import anyio
import pytest
from acp.schema import McpServerStdio
from support import spawn
from support.helpers import TESTS, RecordingClient, crow_command, crow_env, echo_stdio, run_crow, text, write_config
from support.multi_support import scripted
from support.multi_support import serve as serve_graph
from support.otlp_receiver import ReceivedSpan, otlp_receiver
from support.serve_support import crow_serve, over_ws

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio
KEY = "sk-trace-test-key-0123456789"
PROMPT = "please echo the words PURPLE-ELEPHANT"
ARGUMENT = "ARGUMENT-MARMALADE"
PROBE_AGENT = TESTS / "agents" / "otel_probe_agent.py"
TRACE_SERVER = TESTS / "mcp_servers" / "trace_server.py"
USAGE = {"prompt_tokens": 120, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 100}}


def tool_turn() -> list[Reply]:
    calls = [ToolCall("echo__echo", {"text": ARGUMENT}, id="e1"), ToolCall("echo__add", {"a": 2, "b": 3}, id="a1")]
    return [Reply(text="Echoing.", tool_calls=calls, usage=USAGE), Reply(text="done", usage=USAGE)]


def by_id(spans: list[ReceivedSpan]) -> dict[str, ReceivedSpan]:
    return {s.span_id: s for s in spans}


def parent(span: ReceivedSpan, spans: list[ReceivedSpan]) -> ReceivedSpan:
    return by_id(spans)[span.parent_id]


async def one_turn(env: dict[str, str], cwd: str, prompt: str, mcp_servers: list | None = None) -> RecordingClient:
    client = RecordingClient()
    async with run_crow(client, env) as (conn, _):
        with anyio.fail_after(60):
            servers = [echo_stdio()] if mcp_servers is None else mcp_servers
            sid = (await conn.new_session(cwd=cwd, mcp_servers=servers)).session_id
            await conn.set_session_mode(session_id=sid, mode_id="ask")
            assert (await conn.prompt(session_id=sid, prompt=[text(prompt)])).stop_reason == "end_turn"
    return client  # crow has exited: it flushed its spans on the way out


async def test_a_tool_turn_through_crow_acp_is_one_trace_of_genai_spans(crow_home, tmp_path):
    with otlp_receiver() as (receiver, url):
        async with ScriptedModel(tool_turn()) as model:
            env = crow_env(crow_home, model.base_url, OPENAI_API_KEY=KEY, OTEL_EXPORTER_OTLP_ENDPOINT=url)
            client = await one_turn(env, str(tmp_path), PROMPT)
    assert len(client.permission_requests) == 1  # echo__add asked; echo__echo is read-only
    spans = receiver.spans
    assert set(receiver.paths) == {"/v1/traces"}
    assert len({s.trace_id for s in spans}) == 1, [s.name for s in spans]  # the turn is one trace
    [turn] = receiver.named("invoke_agent")
    assert turn.name == "invoke_agent crow" and turn.parent_id == ""
    assert turn.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert turn.attributes["gen_ai.agent.name"] == "crow" and turn.attributes["crow.stop_reason"] == "end_turn"
    chats = receiver.named("chat ")
    assert len(chats) == 2 and all(parent(c, spans) is turn for c in chats)
    for chat in chats:
        assert chat.kind == 3  # SPAN_KIND_CLIENT
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.provider.name"] == "openai"
        assert chat.attributes["gen_ai.request.model"] == chat.name.removeprefix("chat ")
        assert chat.attributes["gen_ai.usage.input_tokens"] == 120
        assert chat.attributes["gen_ai.usage.output_tokens"] == 9
        assert chat.attributes["gen_ai.usage.cache_read.input_tokens"] == 100
    assert sorted(c.attributes["gen_ai.response.finish_reasons"][0] for c in chats) == ["stop", "tool_calls"]
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in receiver.named("execute_tool")}
    assert set(tools) == {"e1", "a1"}
    for call_id, name in (("e1", "echo__echo"), ("a1", "echo__add")):
        tool = tools[call_id]
        assert tool.name == f"execute_tool {name}" and parent(tool, spans) is turn
        assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
        assert tool.attributes["gen_ai.tool.name"] == name
        [mcp] = [s for s in receiver.named("tools/call") if s.parent_id == tool.span_id]
        assert mcp.attributes["mcp.method.name"] == "tools/call" and mcp.kind == 3
    [asked] = receiver.named("permission")
    assert asked.name == "permission echo__add" and parent(asked, spans) is tools["a1"]
    assert turn.resource["service.name"] == "crow"
    raw = receiver.raw()
    for secret in (KEY, "PURPLE-ELEPHANT", ARGUMENT):  # not opted in: no prompt, no arguments; a key never
        assert secret.encode() not in raw


async def test_an_mcp_server_is_handed_the_trace_context_of_its_call(crow_home, tmp_path):
    """The MCP request's `_meta.traceparent` names the turn's trace and crow's span of that call, so a server
    that traces too joins the turn's trace (SEP-414)."""
    server = McpServerStdio(name="trace", command=spawn.python(), args=[str(TRACE_SERVER)], env=[])
    script = [Reply(tool_calls=[ToolCall("trace__traceparent", {}, id="t1")]), Reply(text="done")]
    with otlp_receiver() as (receiver, url):
        async with ScriptedModel(script) as model:
            env = crow_env(crow_home, model.base_url, OTEL_EXPORTER_OTLP_ENDPOINT=url)
            await one_turn(env, str(tmp_path), "trace it", mcp_servers=[server])
            told = json.dumps(model.requests[-1]["messages"][-1])
    [call] = receiver.named("tools/call")  # crow's client span of the MCP request
    assert f"00-{call.trace_id}-{call.span_id}-01" in told, told


async def test_opted_in_spans_carry_the_prompt_and_the_arguments_but_never_a_key(crow_home, tmp_path):
    with otlp_receiver() as (receiver, url):
        async with ScriptedModel(tool_turn()) as model:
            env = crow_env(crow_home, model.base_url, OPENAI_API_KEY=KEY)
            write_config(crow_home, f'[telemetry]\nrecord_content = true\ntraces_endpoint = "{url}"\n')
            await one_turn(env, str(tmp_path), f"{PROMPT} with my key {KEY}")
    [turn] = receiver.named("invoke_agent")
    assert "PURPLE-ELEPHANT" in turn.attributes["gen_ai.input.messages"]
    assert "[redacted key]" in turn.attributes["gen_ai.input.messages"]
    [echo] = [s for s in receiver.named("execute_tool") if s.attributes["gen_ai.tool.call.id"] == "e1"]
    assert ARGUMENT in echo.attributes["gen_ai.tool.call.arguments"]
    assert ARGUMENT in echo.attributes["gen_ai.tool.call.result"]
    assert any("done" in c.attributes.get("gen_ai.output.messages", "") for c in receiver.named("chat"))
    assert KEY.encode() not in receiver.raw()


async def test_crow_serve_traces_each_turn_and_flushes_on_sigterm(crow_home, tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    read = ToolCall("read_file", {"path": str(tmp_path / "notes.txt")}, id="r")
    script = [Reply(text="Reading.", tool_calls=[read], usage=USAGE), Reply(text="done", usage=USAGE)]
    script += [Reply(text="again", usage=USAGE)]
    with otlp_receiver() as (receiver, url):
        async with ScriptedModel(script) as model:
            env = crow_env(crow_home, model.base_url, OTEL_EXPORTER_OTLP_ENDPOINT=url)
            async with crow_serve(env, roots=(str(tmp_path),)) as served:
                with anyio.fail_after(60):
                    async with over_ws(RecordingClient(), served) as conn:
                        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                        for words in ("read it", "once more"):
                            assert (await conn.prompt(session_id=sid, prompt=[text(words)])).stop_reason == "end_turn"
                    served.proc.terminate()  # the batch still held is exported on the way out
                    assert await served.proc.wait() == 0
    turns = receiver.named("invoke_agent")
    assert len(turns) == 2 and len({t.trace_id for t in turns}) == 2  # one trace per turn
    for turn in turns:
        assert turn.parent_id == "" and turn.attributes["gen_ai.conversation.id"] == sid
        assert {s.trace_id for s in receiver.spans if s.parent_id == turn.span_id} == {turn.trace_id}
    first = [s for s in receiver.spans if s.trace_id == turns[0].trace_id]
    assert sorted(s.name.split()[0] for s in first) == ["chat", "chat", "execute_tool", "invoke_agent"]
    [tool] = [s for s in first if s.name == "execute_tool read_file"]
    assert tool.attributes["gen_ai.tool.call.id"] == "r" and tool.parent_id == turns[0].span_id


def member_scripts() -> dict[str, list]:
    return {
        "coder": [Reply(text="Look.", tool_calls=[ToolCall("lookup", {"key": "k1"}, id="l1")]), Reply(text="CODED")],
        "reviewer": [Reply(text="REVIEWED")],
        "tester": [Reply(text="TESTED")],
    }


async def test_a_multiagents_members_are_child_spans_of_its_turn(crow_home, tmp_path):
    with otlp_receiver() as (receiver, url):
        async with scripted(**member_scripts()) as models:
            env = {"OTEL_EXPORTER_OTLP_ENDPOINT": url}
            async with serve_graph(RecordingClient(), "build", crow_home, models, env=env) as conn:
                with anyio.fail_after(60):
                    sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                    assert (await conn.prompt(session_id=sid, prompt=[text("write add")])).stop_reason == "end_turn"
    spans = receiver.spans
    assert len({s.trace_id for s in spans}) == 1, [s.name for s in spans]
    [graph] = [s for s in receiver.named("invoke_agent") if s.parent_id == ""]
    assert graph.attributes["gen_ai.conversation.id"] == sid
    members = {s.attributes["gen_ai.agent.name"]: s for s in receiver.named("invoke_agent") if s is not graph}
    assert set(members) == {"coder", "reviewer", "tester"}
    assert members["coder"].parent_id == graph.span_id
    for member in members.values():  # each under the graph's turn, however deep its hand-off
        ancestor = member
        while ancestor.parent_id:
            ancestor = parent(ancestor, spans)
        assert ancestor is graph
    assert members["reviewer"].attributes["gen_ai.conversation.id"] != sid  # the entry's session is the editor's
    [lookup] = receiver.named("execute_tool lookup")
    assert parent(lookup, spans) is members["coder"]
    models_called = {c.attributes["gen_ai.request.model"]: parent(c, spans) for c in receiver.named("chat")}
    assert {model: turn.attributes["gen_ai.agent.name"] for model, turn in models_called.items()} == {
        "scripted-coder": "coder",
        "scripted-reviewer": "reviewer",
        "scripted-tester": "tester",
    }


@pytest.mark.parametrize("endpoint", [None, "on"])
async def test_opentelemetrys_sdk_is_imported_only_when_tracing_is_on(crow_home, tmp_path, endpoint):
    script = [Reply(tool_calls=[ToolCall("probe", {}, id="p")]), Reply(text="ok")]
    with otlp_receiver() as (receiver, url):
        async with ScriptedModel(script) as model:
            env = crow_env(crow_home, model.base_url, **({"OTEL_EXPORTER_OTLP_ENDPOINT": url} if endpoint else {}))
            client = RecordingClient()
            async with run_crow(client, env, "--agent", f"{PROBE_AGENT}:build", exec_=True) as (conn, _):
                with anyio.fail_after(60):  # exec'd, not forked: nothing preloaded by the fork server
                    sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                    await conn.prompt(session_id=sid, prompt=[text("probe")])
    result = json.dumps([u.model_dump(mode="json") for u in client.tool_updates("p")])
    if endpoint:
        assert "imported: opentelemetry.sdk,opentelemetry.exporter.otlp.proto.http" in result
        assert receiver.named("execute_tool probe")
    else:
        assert "imported: none" in result and not receiver.spans


async def test_a_compaction_is_a_span_of_its_turn(crow_home, tmp_path):
    script = [Reply(text="first", usage=USAGE), Reply(text="second", usage=USAGE), Reply(text="SUMMARY", usage=USAGE)]
    with otlp_receiver() as (receiver, url):
        async with ScriptedModel(script) as model:
            env = crow_env(crow_home, model.base_url, OTEL_EXPORTER_OTLP_ENDPOINT=url)
            async with run_crow(RecordingClient(), env) as (conn, _):
                with anyio.fail_after(60):
                    sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                    for words in ("hello", "again", "/compact"):
                        await conn.prompt(session_id=sid, prompt=[text(words)])
    turns = receiver.named("invoke_agent")
    [compaction] = receiver.named("compaction")
    assert len(turns) == 3 and compaction.parent_id == turns[2].span_id and compaction.status != 2
    assert compaction.attributes["crow.compaction.id"]


async def test_a_delegates_turn_is_a_child_span_of_its_tool_call(crow_home, tmp_path):
    write_config(crow_home, '[delegate]\nenabled = true\nagents = ["crow"]\n')

    def respond(request: dict) -> Reply:
        asked = request["messages"][-1]
        if asked["role"] == "tool":
            return Reply(text="PARENT-DONE")
        if "TASK-A" in str(asked["content"]):
            return Reply(text="ANSWER-A")
        return Reply(tool_calls=[ToolCall("delegate", {"task": "TASK-A"}, id="call_a")])

    with otlp_receiver() as (receiver, url):
        async with ScriptedModel(default=respond) as model:
            env = crow_env(crow_home, model.base_url, OTEL_EXPORTER_OTLP_ENDPOINT=url)
            await one_turn(env, str(tmp_path), "go", mcp_servers=[])
    spans = receiver.spans
    assert len({s.trace_id for s in spans}) == 1, [s.name for s in spans]
    [parent_turn] = [s for s in receiver.named("invoke_agent") if s.parent_id == ""]
    [tool] = receiver.named("execute_tool delegate")
    [helper] = [s for s in receiver.named("invoke_agent") if s is not parent_turn]
    assert parent(tool, spans) is parent_turn and parent(helper, spans) is tool
    assert helper.attributes["gen_ai.conversation.id"] != parent_turn.attributes["gen_ai.conversation.id"]


async def test_a_tool_name_of_invalid_unicode_does_not_lose_the_trace(crow_home, tmp_path):
    script = [Reply(tool_calls=[ToolCall("bad\ud800name", {}, id="u")]), Reply(text="ok")]
    with otlp_receiver() as (receiver, url):
        async with ScriptedModel(script) as model:
            env = crow_env(crow_home, model.base_url, OTEL_EXPORTER_OTLP_ENDPOINT=url)
            await one_turn(env, str(tmp_path), "go", mcp_servers=[])
    [tool] = receiver.named("execute_tool")
    assert tool.attributes["gen_ai.tool.name"] == "bad\ufffdname" and tool.status == 2  # unknown: an error
    assert len(receiver.named("invoke_agent")) == 1


async def test_crow_run_traces_its_turn_and_logs_json(crow_home, tmp_path):
    with otlp_receiver() as (receiver, url):
        async with ScriptedModel([Reply(text="hi there", usage=USAGE)]) as model:
            env = crow_env(crow_home, model.base_url, OTEL_EXPORTER_OTLP_ENDPOINT=url, CROW_LOG_LEVEL="DEBUG")
            command = crow_command("run", "hi", "--cwd", str(tmp_path), "--log-format", "json")
            done = await anyio.run_process(command, env=env, check=False)
    assert done.returncode == 0, done.stderr
    [turn] = receiver.named("invoke_agent")
    [chat] = receiver.named("chat")
    assert chat.parent_id == turn.span_id and chat.attributes["gen_ai.usage.output_tokens"] == 9
    lines = [json.loads(line) for line in (crow_home / "logs" / "crow.log").read_text().splitlines()]
    assert lines and all(set(line) >= {"time", "level", "logger", "message", "trace_id"} for line in lines)
    during = [line for line in lines if line["session"] is not None]  # the model request's debug lines
    assert during and {line["trace_id"] for line in during} == {turn.trace_id}


async def test_a_collector_that_is_down_costs_the_turn_nothing(crow_home, tmp_path):
    async with ScriptedModel([Reply(text="still here")]) as model:
        env = crow_env(crow_home, model.base_url, OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9")  # nothing there
        client = RecordingClient()
        async with run_crow(client, env) as (conn, proc):
            with anyio.fail_after(60):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                assert (await conn.prompt(session_id=sid, prompt=[text("hi")])).stop_reason == "end_turn"
                proc.stdin.close()
                assert await proc.wait() == 0  # the flush gave up: crow ends as usual
    assert client.text() == "still here"
