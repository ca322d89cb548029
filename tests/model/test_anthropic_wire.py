"""The `anthropic` wire end to end over ACP: Messages SSE from the scripted model, thinking signed and sent
back byte for byte, prompt caching priced at the cache rates, retries and malformed streams."""

from __future__ import annotations

import itertools
import json

import anyio
import pytest
from support.helpers import CORE_AGENT, RecordingClient, crow_env, echo_stdio, text, write_config
from support.hosted import hosted_crow
from support.raw_wire import raw_crow

from crow_acp.model.retries import MODEL_RETRY
from crow_acp.testing import Fault, Reply, ScriptedModel, ToolCall
from crow_acp.testing.anthropic_wire import AnthropicState

PROFILE = """
model = "claude"
[models.claude]
model = "claude-sonnet-test"
api = "anthropic"
reasoning = true
reasoning_effort = "high"
input_price = 3.0
output_price = 15.0
cache_write_price = 3.75
cache_read_price = 0.3
"""


NOTICES = {"session": {"notices": {}}}


def thoughts(client: RecordingClient) -> str:
    return "".join(u.content.text for u in client.of("agent_thought_chunk"))


async def one_session(home, model, client, *prompts, mcp=()):
    env = crow_env(home, model.base_url)
    async with hosted_crow(client, env, "--agent", CORE_AGENT) as (conn, _):
        sid = (await conn.new_session(cwd=str(home), mcp_servers=list(mcp))).session_id
        stops = [(await conn.prompt(session_id=sid, prompt=[text(p)])).stop_reason for p in prompts]
    return sid, stops


@pytest.mark.anyio
async def test_a_tool_turn_shows_thinking_and_sends_the_signed_thinking_back_unchanged(crow_home):
    write_config(crow_home, PROFILE)
    script = [
        Reply(reasoning="I should echo it.", text="Echoing.", tool_calls=[ToolCall("echo__echo", {"text": "hi"})]),
        Reply(reasoning="Done now.", text="It said hi."),
    ]
    client = RecordingClient()
    with ScriptedModel(script) as model, anyio.fail_after(180):
        _, stops = await one_session(crow_home, model, client, "echo hi", mcp=[echo_stdio()])
    assert stops == ["end_turn"]
    assert thoughts(client) == "I should echo it.Done now."
    assert "Echoing." in client.text() and "It said hi." in client.text()
    first, second = model.requests
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 16000}
    assistant = second["messages"][1]
    assert assistant["role"] == "assistant"
    thinking = assistant["content"][0]
    assert thinking["type"] == "thinking" and thinking["thinking"] == "I should echo it."
    assert thinking["signature"] == model.anthropic.sign("I should echo it.")
    assert [b["type"] for b in assistant["content"]] == ["thinking", "text", "tool_use"]
    result = second["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == assistant["content"][2]["id"]
    assert "hi" in result["content"]
    [update] = [u for u in client.of("usage_update")][-1:]
    assert update.cost is not None and update.cost.amount > 0


CACHED = """
model = "claude"
[models.claude]
model = "claude-sonnet-test"
api = "anthropic"
input_price = 3.0
output_price = 15.0
cache_write_price = 3.75
cache_read_price = 0.3
"""


@pytest.mark.anyio
async def test_each_call_reads_the_previous_prefix_from_the_cache_and_the_cost_shows_it(crow_home):
    write_config(crow_home, CACHED)
    long = "a long prompt. " * 400
    client = RecordingClient()
    with ScriptedModel(default=Reply(text="ok")) as model, anyio.fail_after(180):
        await one_session(crow_home, model, client, long, "second", "third")
    requests = model.requests
    for req in requests:
        marks = [b for b in _all_blocks(req) if "cache_control" in b]
        assert 1 <= len(marks) <= 4
    costs = [u.cost.amount for u in client.of("usage_update") if u.cost is not None]
    assert len(costs) == 3
    # The scripted API's cache report, replayed: each call reads the whole previous request from the cache.
    replay = AnthropicState()
    usages = [replay.usage(req, len("ok") // 4 + 1) for req in requests]
    assert usages[0]["cache_read_input_tokens"] == 0 and usages[0]["cache_creation_input_tokens"] > 1000
    for before, usage in itertools.pairwise(usages):
        assert usage["cache_read_input_tokens"] >= sum(
            before[k] for k in ("cache_read_input_tokens", "cache_creation_input_tokens")
        )
    priced = [
        (u["input_tokens"] * 3.0 + u["cache_creation_input_tokens"] * 3.75 + u["cache_read_input_tokens"] * 0.3
         + u["output_tokens"] * 15.0) / 1e6
        for u in usages
    ]  # fmt: skip
    assert costs == pytest.approx([sum(priced[: n + 1]) for n in range(3)], abs=2e-6)
    # The second call reads the first call's input at a tenth of the price instead of paying it again.
    assert costs[1] - costs[0] < costs[0] / 3
    assert requests[1]["messages"][0] == {k: v for k, v in requests[0]["messages"][0].items()}


def _all_blocks(req):
    out = list(req.get("tools") or []) + list(req.get("system") or [])
    for message in req["messages"]:
        out += message["content"]
    return out


def test_an_altered_signature_is_refused_by_the_scripted_api():
    """The checks tests rely on: the scripted API refuses what the real one refuses."""
    import httpx

    with ScriptedModel(default=Reply(text="ok")) as model:
        bad = {"type": "thinking", "thinking": "x", "signature": model.anthropic.sign("y")}
        body = {"model": "m", "max_tokens": 10, "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": [bad, {"type": "text", "text": "t"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "r"}]},
        ]}  # fmt: skip
        url = model.base_url + "/messages"
        answer = httpx.post(url, json=body)
        assert answer.status_code == 400 and answer.json()["error"]["type"] == "invalid_request_error"
        assert "signature" in answer.json()["error"]["message"]
        body["messages"][1]["content"] = [{"type": "text", "text": "t"}]
        answer = httpx.post(url, json=body)
        assert "tool_use_id" in answer.json()["error"]["message"]
        marked = {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}
        five = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": [dict(marked)] * 5}]}
        assert "maximum of 4" in httpx.post(url, json=five).json()["error"]["message"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("fault", "said"),
    [
        (Fault(cut_after=5, reply=Reply(text="partial reply text here")), "cut off"),
        (
            Fault(529, "Overloaded", cut_after=5, reply=Reply(text="partial reply text"), event="error"),
            "overloaded_error",
        ),
    ],
)
async def test_a_broken_stream_fails_the_turn_clearly_and_the_history_stays_valid(crow_home, fault, said):
    write_config(crow_home, CACHED)
    client = RecordingClient()
    with ScriptedModel([fault, Reply(text="fine")]) as model, anyio.fail_after(180):
        env = crow_env(crow_home, model.base_url)
        async with hosted_crow(client, env, "--agent", CORE_AGENT) as (conn, _):
            sid = (await conn.new_session(cwd=str(crow_home), mcp_servers=[])).session_id
            with pytest.raises(Exception) as failed:
                await conn.prompt(session_id=sid, prompt=[text("one")])
            assert said in str(failed.value).lower()
            assert (await conn.prompt(session_id=sid, prompt=[text("two")])).stop_reason == "end_turn"
    assert len(model.requests) == 2  # the second request was valid for the API's checks


@pytest.mark.anyio
async def test_an_unknown_event_is_ignored_and_529_with_retry_after_is_retried_with_a_notice(crow_home, tmp_path):
    write_config(crow_home, CACHED)
    script = [
        Fault(529, "Overloaded", retry_after=0.01),
        Fault(cut_after=3, reply=Reply(text="all of it"), event="content_block_flash"),
    ]
    with ScriptedModel(script) as model, anyio.fail_after(180):
        async with raw_crow(crow_env(crow_home, model.base_url), capabilities=NOTICES) as crow:
            sid = await crow.new_session(str(tmp_path))
            assert (await crow.prompt(sid, "one"))["result"]["stopReason"] == "end_turn"
            shown = [(u["title"], u.get("description")) for u in crow.updates if u["sessionUpdate"] == "notice"]
            said = "".join(u["content"]["text"] for u in crow.updates if u["sessionUpdate"] == "agent_message_chunk")
    assert said == "all of it"
    assert shown == [(MODEL_RETRY, "Retry 1 of 3 (HTTP 529).")]
    assert len(model.requests) == 2


def signed_thinking(req: dict) -> list[dict]:
    return [b for m in req["messages"] if m["role"] == "assistant" for b in m["content"] if b["type"] == "thinking"]


@pytest.mark.anyio
async def test_fork_and_compaction_keep_the_signed_thinking(crow_home, tmp_path):
    write_config(crow_home, PROFILE)
    script = [
        Reply(reasoning="Echo it first.", text="Echoing.", tool_calls=[ToolCall("echo__echo", {"text": "hi"})]),
        Reply(reasoning="Done.", text="It said hi."),
        Reply(text="in the fork"),
        Reply(reasoning="A second thought.", text="second answer"),
        Reply(text="The user asked for an echo; it said hi."),  # the summary /compact asks for
        Reply(text="after the compaction"),
    ]
    client = RecordingClient()
    with ScriptedModel(script) as model, anyio.fail_after(180):
        async with hosted_crow(client, crow_env(crow_home, model.base_url)) as (conn, _):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[echo_stdio()])).session_id
            await conn.prompt(session_id=sid, prompt=[text("echo hi")])
            fork = await conn.fork_session(session_id=sid, cwd=str(tmp_path), mcp_servers=[echo_stdio()])
            await conn.prompt(session_id=fork.session_id, prompt=[text("and in the fork?")])
            await conn.prompt(session_id=sid, prompt=[text("a second question")])
            await conn.prompt(session_id=sid, prompt=[text("/compact")])
            await conn.prompt(session_id=sid, prompt=[text("and now?")])
    in_fork, after = model.requests[2], model.requests[-1]
    assert [b["thinking"] for b in signed_thinking(in_fork)] == ["Echo it first.", "Done."]
    assert "after the compaction" in client.text()
    assert "The user asked for an echo" in json.dumps(after["messages"])
    kept = signed_thinking(after)  # the kept turn is a copy of the original entries, attachments and all
    assert [b["thinking"] for b in kept] == ["A second thought."] and all(
        b["signature"] == model.anthropic.sign(b["thinking"]) for b in kept
    )


@pytest.mark.anyio
async def test_redacted_thinking_is_sent_back_unchanged_and_never_shown(crow_home):
    write_config(crow_home, PROFILE)
    script = [
        Reply(reasoning="Visible part.", redacted=True, tool_calls=[ToolCall("echo__echo", {"text": "x"})]),
        Reply(text="finished"),
    ]
    client = RecordingClient()
    with ScriptedModel(script) as model, anyio.fail_after(180):
        _, stops = await one_session(crow_home, model, client, "go", mcp=[echo_stdio()])
    assert stops == ["end_turn"]
    assert thoughts(client) == "Visible part."  # the redacted block is the model's, not the editor's
    blocks = model.requests[1]["messages"][1]["content"]
    assert [b["type"] for b in blocks] == ["thinking", "redacted_thinking", "tool_use"]
    assert blocks[1]["data"] == "redacted:" + model.anthropic.sign("redacted")
