"""Strict histories: whatever is stored or streamed, the model request satisfies the strictest provider.

A property test over generated hostile histories (hypothesis), and the same rules checked on real
model requests after loading damaged stored sessions and after a model that repeats ids and sends
arguments that are not a JSON object.
"""

from __future__ import annotations

import json
import random
import re
import time
import uuid
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.helpers import RecordingClient, in_process

from crow_acp import AcpAgent, CrowCallbacks, FunctionTool, load_config
from crow_acp.core.history_rules import strict_messages
from crow_acp.history import EntryMeta, StoredMessage
from crow_acp.store import SessionRecord
from crow_acp.testing import Reply, ScriptedModel, ToolCall

NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def check_rules(messages: list[dict[str, Any]]) -> None:
    """The issue's rules, written independently of crow's repair."""
    open_calls: list[str] = []
    seen: set[str] = set()
    for index, message in enumerate(messages):
        role = message["role"]
        if role == "tool":
            assert open_calls, f"{index}: a result with no call"
            assert message["tool_call_id"] == open_calls.pop(0), f"{index}: a result out of order or for another call"
            assert isinstance(message["content"], str)
            continue
        assert not open_calls, f"{index}: {role} while {open_calls} are unanswered"
        calls = message.get("tool_calls")
        if role == "assistant" and calls is not None:
            assert calls, f"{index}: an empty tool_calls list"
            for call in calls:
                assert call["type"] == "function" and NAME.fullmatch(call["function"]["name"])
                assert isinstance(json.loads(call["function"]["arguments"]), dict), f"{index}: arguments not an object"
                assert isinstance(call["id"], str) and call["id"] and call["id"] not in seen, f"{index}: id reused"
                seen.add(call["id"])
                open_calls.append(call["id"])
    assert not open_calls, f"calls {open_calls} never answered"


IDS = st.sampled_from(["a", "b", "c", "", None, 7, "x" * 200])
ARGUMENTS = st.sampled_from(['{"text": "hi"}', "{}", "[]", "not json", '"str"', "", None, 5, '{"a": {"b": [1]}}'])
NAMES = st.sampled_from(["echo", "rm -rf", "", None, "ok_tool", "x" * 80])


@st.composite
def tool_call(draw: Any) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(["junk", 3, None, {"id": "a"}]))  # not a call at all
    return {"id": draw(IDS), "type": "function", "function": {"name": draw(NAMES), "arguments": draw(ARGUMENTS)}}


@st.composite
def message(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from(["user", "system", "assistant", "calls", "tool", "tool", "empty_calls"]))
    if kind in ("user", "system", "assistant"):
        return {"role": kind, "content": draw(st.text(max_size=5))}
    if kind == "calls":
        return {"role": "assistant", "content": None, "tool_calls": draw(st.lists(tool_call(), min_size=1, max_size=4))}
    if kind == "empty_calls":
        return {"role": "assistant", "content": draw(st.sampled_from([None, "", "t"])), "tool_calls": []}
    content = draw(st.sampled_from(["result", "", None, ["a", "list"]]))
    return {"role": "tool", "tool_call_id": draw(IDS), "content": content}


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(message(), max_size=25))
def test_any_history_becomes_strict_and_well_formed_ones_are_untouched(messages):
    strict = strict_messages(messages)
    check_rules(strict)
    assert strict_messages(strict) == strict  # a second pass changes nothing
    # Nothing the user or the model said is dropped: only results with no call are left out.
    kept = [m for m in strict if m["role"] in ("user", "system")]
    assert kept == [m for m in messages if m["role"] in ("user", "system")]


def well_formed(rng: random.Random) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
    for turn in range(rng.randint(1, 4)):
        ids = [f"t{turn}_{n}" for n in range(rng.randint(1, 3))]
        calls = [{"id": i, "type": "function", "function": {"name": "echo", "arguments": "{}"}} for i in ids]
        messages += [{"role": "assistant", "content": None, "tool_calls": calls}]
        messages += [{"role": "tool", "tool_call_id": i, "content": "r"} for i in ids]
        messages += [{"role": "assistant", "content": "done"}, {"role": "user", "content": "more"}]
    return messages


def test_a_valid_history_is_sent_as_it_is():
    rng = random.Random(1)
    for _ in range(50):
        messages = well_formed(rng)
        strict = strict_messages(messages)
        assert strict == messages and all(a is b for a, b in zip(strict, messages, strict=True))


def damage(rng: random.Random, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a kill, a bug, an old version or a hand-edited database may leave behind."""
    messages = [json.loads(json.dumps(m)) for m in messages]
    for _ in range(rng.randint(1, 4)):
        calls = [m for m in messages if m.get("tool_calls")]
        results = [i for i, m in enumerate(messages) if m["role"] == "tool"]
        match rng.randint(0, 6):
            case 0 if results:  # a result lost (killed before it was written)
                messages.pop(rng.choice(results))
            case 1 if results:  # a result written twice
                i = rng.choice(results)
                messages.insert(i, dict(messages[i]))
            case 2 if results:  # a result moved after the next user message
                messages.append(messages.pop(rng.choice(results)))
            case 3 if calls:  # an id used again in a later reply
                rng.choice(calls)["tool_calls"][0]["id"] = calls[0]["tool_calls"][0]["id"]
            case 4 if calls:  # arguments that are not an object
                rng.choice(calls)["tool_calls"][0]["function"]["arguments"] = rng.choice(["[1]", "{bad", "", "null"])
            case 5:  # a result for a call that never existed
                messages.insert(
                    rng.randint(0, len(messages)), {"role": "tool", "tool_call_id": "ghost", "content": "?"}
                )
            case _ if calls:  # the process died right after the reply was recorded
                messages.append({"role": "assistant", "content": None, "tool_calls": rng.choice(calls)["tool_calls"]})
    return messages


@pytest.mark.anyio
async def test_damaged_stored_sessions_load_and_send_strict_requests(crow_home, tmp_path, monkeypatch):
    """60 damaged sessions written to the store, each loaded and prompted: every request obeys the rules,
    and a model that then repeats an id and sends bad arguments is answered with errors, strictly."""
    rng = random.Random(13)
    histories = [damage(rng, well_formed(rng)) for _ in range(60)]
    ran: list[dict[str, Any]] = []

    async def echo(arguments: dict[str, Any], context: Any) -> str:
        ran.append(arguments)
        return "echoed"

    tool = FunctionTool("echo", "Echo.", {"type": "object", "properties": {}}, echo, read_only=True)
    hostile = Reply(
        tool_calls=[
            ToolCall("echo", "not json", id="t0_0"),  # an id from the stored history, and no JSON
            ToolCall("echo", {"ok": True}, id="twice"),
            ToolCall("echo", "[1, 2]", id="bad-arguments"),
            ToolCall("echo", {"x": 1}, id="twice"),  # the same id twice in one reply
        ]
    )
    script: list[Any] = []
    for _ in histories:
        script += [hostile, Reply(text="fine")]
    client = RecordingClient()
    async with ScriptedModel(script) as model:
        monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        async with in_process(AcpAgent(load_config(home=crow_home))) as agent:
            agent.on_connect(client)
            agent.set_callbacks(CrowCallbacks(begin_session=[lambda session, **_: session.add_tool(tool)]))
            with anyio.fail_after(120):
                for messages in histories:
                    sid = uuid.uuid4().hex
                    agent.store.create(SessionRecord(sid, str(tmp_path), None, time.time(), time.time(), {}))
                    for row, m in enumerate(messages, 1):
                        agent.store.append(sid, StoredMessage(m, EntryMeta(), row_id=row))
                    await agent.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                    response = await agent.prompt(prompt=[{"type": "text", "text": "go on"}], session_id=sid)
                    assert response.stop_reason == "end_turn"
                    await agent.close_session(session_id=sid)

    assert len(model.requests) == 2 * len(histories)
    for request in model.requests:
        check_rules(request["messages"])
    # The hostile reply: only the well-formed call with a fresh id ran; the others got error results.
    last = model.requests[1]["messages"]
    answers = [m["content"] for m in last[-4:]]
    assert "already used" in answers[0] and answers[1] == "echoed" and "already used" in answers[3]
    assert answers[2] == "Invalid tool arguments: expected a JSON object, got list"
    assert ran == [{"ok": True}] * len(histories)
    # The editor still saw the raw text the model sent.
    raws = [u.raw_input for u in client.of("tool_call") if isinstance(u.raw_input, dict) and "_raw" in u.raw_input]
    assert {"_raw": "not json"} in raws and {"_raw": "[1, 2]"} in raws
