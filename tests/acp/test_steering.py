"""Queue and steer (issue 31) over a real `crow acp` on stdio, every message crow sends checked by zod.

Queue: a session/prompt that arrives during a turn waits for it; the prompts run in arrival order and
each gets its own answer; a cancel ends the running turn and every queued one. Steer: `_session/steering`
reaches the model at its next call, after the running tool's result or by cutting off the streaming reply.
"""

from __future__ import annotations

from typing import Any

import pytest
from support import spawn
from support.helpers import CORE_AGENT, TESTS, assert_strict_pairing, crow_env
from support.history_checks import stored_rows
from support.raw_wire import RawCrow, raw_crow
from support.zod_check import problems, wire_messages

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio
GATE = {"name": "gate", "command": spawn.python(), "args": [str(TESTS / "mcp_servers" / "gate_server.py")], "env": []}


def prompt(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def users(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


def chunks(crow: RawCrow) -> list[str]:
    return [u["content"]["text"] for u in crow.updates if u["sessionUpdate"] == "agent_message_chunk"]


def checked(crow: RawCrow, answers: list[dict[str, Any]]) -> list[str]:
    """zod's problems with everything crow sent: updates, requests, the initialize answer and prompt answers."""
    init = next(m["result"] for m in crow.received if "protocolVersion" in (m.get("result") or {}))
    sent = [("zInitializeResponse", init), *(("zPromptResponse", a["result"]) for a in answers if "result" in a)]
    return problems(wire_messages(crow.received) + sent)


async def steer(crow: RawCrow, sid: str, text: str, **meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"sessionId": sid, "prompt": prompt(text)}
    if meta:
        params["_meta"] = {"steering": meta}
    return await crow.call("_session/steering", params)


async def test_three_prompts_sent_back_to_back_get_three_answers_in_order(crow_home, tmp_path):
    script = [Reply(text="one one one", chunks=6, delay=0.02), Reply(text="two"), Reply(text="three")]
    with ScriptedModel(script) as model:
        async with raw_crow(crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as crow:
            init = next(m["result"] for m in crow.received if "protocolVersion" in (m.get("result") or {}))
            sid = await crow.new_session(str(tmp_path))
            ids = [
                await crow.send("session/prompt", {"sessionId": sid, "prompt": prompt(p)})
                for p in ("first", "second", "third")
            ]
            answers = [await crow.answer(request_id) for request_id in ids]
    assert init["agentCapabilities"]["_meta"] == {"claudeCode": {"promptQueueing": True}}
    assert init["_meta"]["steering"] == {"supported": True}
    assert [a["result"]["stopReason"] for a in answers] == ["end_turn"] * 3
    # Each answer follows its own reply's text, and the replies came in the prompts' order.
    seen = [
        ("answer", ids.index(m["id"]))
        if "id" in m and m["id"] in ids
        else ("text", m["params"]["update"]["content"]["text"])
        for m in crow.received
        if ("id" in m and m["id"] in ids and "method" not in m)
        or (m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
    ]
    answered_at = [seen.index(("answer", n)) for n in range(3)]
    assert answered_at == sorted(answered_at)
    texts = ["".join(t for kind, t in seen[start:end] if kind == "text") for start, end in
             zip([0, *(a + 1 for a in answered_at[:-1])], answered_at, strict=True)]  # fmt: skip
    assert texts == ["one one one", "two", "three"]
    # Queued, not interleaved: each turn's request holds the whole turn before it.
    assert [users(r) for r in model.requests] == [["first"], ["first", "second"], ["first", "second", "third"]]
    assert [m["role"] for m in model.requests[2]["messages"]] == ["user", "assistant"] * 2 + ["user"]
    assert checked(crow, answers) == []


async def test_a_cancel_ends_the_running_turn_and_every_queued_one(crow_home, tmp_path):
    script = [Reply(text="word " * 200, chunks=200, hold_after=4), Reply(text="fine")]
    with ScriptedModel(script) as model:
        async with raw_crow(crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as crow:
            sid = await crow.new_session(str(tmp_path))
            first = await crow.send("session/prompt", {"sessionId": sid, "prompt": prompt("first")})
            await crow.wait_for(lambda c: chunks(c))
            queued = [
                await crow.send("session/prompt", {"sessionId": sid, "prompt": prompt(p)}) for p in ("second", "third")
            ]
            await crow.notify("session/cancel", {"sessionId": sid})
            answers = [await crow.answer(request_id) for request_id in (first, *queued)]
            after = await crow.prompt(sid, "after")
    assert [a["result"]["stopReason"] for a in answers] == ["cancelled"] * 3
    assert after["result"]["stopReason"] == "end_turn"
    assert len(model.requests) == 2, "a queued prompt reached the model"
    assert users(model.requests[1]) == ["first", "after"]  # the queued prompts were never recorded
    assert checked(crow, [*answers, after]) == []


async def test_a_message_steered_during_a_tool_call_reaches_the_model_after_its_result(crow_home, tmp_path):
    gate = tmp_path / "gate"
    script = [Reply(tool_calls=[ToolCall("gate__wait_for", {"path": str(gate)}, id="waits")]), Reply(text="both done")]
    with ScriptedModel(script) as model:
        async with raw_crow(crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as crow:
            sid = (await crow.call("session/new", {"cwd": str(tmp_path), "mcpServers": [GATE]}))["result"]["sessionId"]
            running = await crow.send("session/prompt", {"sessionId": sid, "prompt": prompt("start")})
            await crow.wait_for(
                lambda c: any(u.get("toolCallId") == "waits" and u.get("status") == "in_progress" for u in c.updates)
            )
            steered = await steer(crow, sid, "also check the README")
            assert len(model.requests) == 1  # it waits for the tool's result
            gate.touch()
            answer = await crow.answer(running)
    assert steered["result"] == {"outcome": "injected"}
    assert answer["result"]["stopReason"] == "end_turn"
    assert len(model.requests) == 2
    messages = model.requests[1]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "user"]
    assert messages[2]["tool_call_id"] == "waits" and "opened" in messages[2]["content"]
    assert messages[3]["content"] == "also check the README"
    assert_strict_pairing(messages)
    assert "".join(chunks(crow)) == "both done"
    assert checked(crow, [answer]) == []


async def test_a_message_steered_mid_stream_cuts_the_reply_off(crow_home, tmp_path):
    script = [Reply(text="a very long answer " * 50, chunks=100, hold_after=6), Reply(text="switched")]
    with ScriptedModel(script) as model:
        async with raw_crow(crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as crow:
            sid = await crow.new_session(str(tmp_path))
            running = await crow.send("session/prompt", {"sessionId": sid, "prompt": prompt("go")})
            await crow.wait_for(lambda c: len(chunks(c)) >= 3)
            steered = await steer(crow, sid, "stop, do the other thing")
            answer = await crow.answer(running)
            shown = "".join(chunks(crow)).removesuffix("switched")
    assert steered["result"] == {"outcome": "injected"}
    assert answer["result"]["stopReason"] == "end_turn"
    assert shown and len(shown) < len("a very long answer " * 50)
    messages = model.requests[1]["messages"]
    assert messages == [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": shown},  # what was shown of the cut reply, no more
        {"role": "user", "content": "stop, do the other thing"},
    ]
    rows = [(m["role"], meta.get("cut")) for m, meta, _ in stored_rows(crow_home, sid)]
    assert rows == [("user", None), ("assistant", "steered"), ("user", None), ("assistant", None)]
    assert checked(crow, [answer]) == []


async def test_idle_steering_starts_a_turn_or_asks_for_a_prompt(crow_home, tmp_path):
    with ScriptedModel([Reply(text="started"), Reply(text="next one")]) as model:
        async with raw_crow(crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as crow:
            sid = await crow.new_session(str(tmp_path))
            required = await steer(crow, sid, "not now", idleBehavior="promptRequired")
            assert required["result"] == {"outcome": "promptRequired"} and model.requests == []
            started = await steer(crow, sid, "hello")
            assert started["result"] == {"outcome": "startedNewTurn"}
            await crow.wait_for(lambda c: "".join(chunks(c)) == "started")
            after = await crow.prompt(sid, "next")  # queued behind the started turn, if it still runs
            bad = [
                await crow.call("_session/steering", params)
                for params in (
                    {"sessionId": sid, "prompt": prompt("x"), "_meta": {"steering": {"idleBehavior": "bogus"}}},
                    {"sessionId": sid, "prompt": []},
                    {"sessionId": sid, "prompt": [{"type": "text"}]},
                    {"prompt": prompt("x")},
                    "not an object",
                )
            ]
            unknown = await crow.call("_session/steering", {"sessionId": "nope", "prompt": prompt("x")})
            other = await crow.call("_crow/no_such_thing", {})
    assert after["result"]["stopReason"] == "end_turn"
    assert [users(r) for r in model.requests] == [["hello"], ["hello", "next"]]
    assert [reply["error"]["code"] for reply in bad] == [-32602] * 5
    assert "error" in unknown and other["error"]["code"] == -32601
    assert checked(crow, [after]) == []


async def test_a_steer_racing_the_end_of_a_turn_is_never_lost(crow_home, tmp_path):
    """Steer many times while short turns run: each message is either injected (the model answers it in
    that turn) or starts a turn of its own; the history stays strict throughout."""
    with ScriptedModel(default=Reply(text="ok", chunks=2, delay=0.01)) as model:
        async with raw_crow(crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as crow:
            sid = await crow.new_session(str(tmp_path))
            running = await crow.send("session/prompt", {"sessionId": sid, "prompt": prompt("p0")})
            outcomes = [(await steer(crow, sid, f"s{n}"))["result"]["outcome"] for n in range(8)]
            await crow.answer(running)
            last = await crow.prompt(sid, "last")  # behind every turn a steer started
    assert set(outcomes) <= {"injected", "startedNewTurn"}
    assert last["result"]["stopReason"] == "end_turn"
    final = model.requests[-1]["messages"]
    assert_strict_pairing(final)
    assert sorted(m["content"] for m in final if m["role"] == "user") == sorted(
        ["p0", "last", *(f"s{n}" for n in range(8))]
    )
    assert final[-1] == {"role": "user", "content": "last"}
