"""Elicitation (issue 20 item 2): an MCP server's question in the middle of a tool call reaches the editor
as `elicitation/create`, scoped to that tool call; the answer goes back to the server; a client that
cannot show it gets nothing and the model is told why; hostile answers never pass as valid; and the
model's `ask_user` tool asks through the same door. Over stdio, with a real MCP server
(mcp_servers/elicit_server.py) and a raw editor that answers by hand. Every `elicitation/create` and
`elicitation/complete` crow sends is checked against the zod schemas of @agentclientprotocol/sdk 2.4.0.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from support.elicit_support import (
    FORM,
    GOOD,
    URL,
    next_question,
    prompt_params,
    questions,
    reply_to,
    session,
    tool_result,
)
from support.helpers import crow_env, tool_names, write_config
from support.raw_wire import RawCrow, raw_crow
from support.zod_check import problems, wire_messages

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio


def withdrawn(crow: RawCrow) -> list[Any]:
    """The ids of the requests crow withdrew with `$/cancel_request` (each checked against the zod schema)."""
    sent = [m["params"] for m in crow.received if m.get("method") == "$/cancel_request"]
    assert problems([("zCancelRequestNotification", params) for params in sent]) == []
    return [params["requestId"] for params in sent]


def book(call_id: str) -> list[Reply]:
    return [Reply(tool_calls=[ToolCall("elicit__book", {"flight": "LH1"}, id=call_id)]), Reply(text="done")]


# (answer the editor gives, what the server must see, what the model must be told besides)
ANSWERS = [
    ({"action": "accept", "content": GOOD}, {"action": "accept", "content": GOOD}, None),
    ({"action": "decline"}, {"action": "decline", "content": None}, None),
    ({"action": "cancel"}, {"action": "cancel", "content": None}, None),
    # Hostile: each is refused, the server is told cancel and the model why.
    ({"action": "maybe"}, {"action": "cancel", "content": None}, "refused (malformed"),
    ({"content": GOOD}, {"action": "cancel", "content": None}, "refused (malformed"),
    ("accept", {"action": "cancel", "content": None}, "refused (malformed"),
    (
        {"action": "accept", "content": {**GOOD, "seat": "roof"}},
        {"action": "cancel", "content": None},
        "'seat' must be one of",
    ),
    (
        {"action": "accept", "content": {**GOOD, "bags": 9}},
        {"action": "cancel", "content": None},
        "'bags' must be at most 3",
    ),
    (
        {"action": "accept", "content": {**GOOD, "bags": "2"}},
        {"action": "cancel", "content": None},
        "'bags' must be a number",
    ),
    ({"action": "accept", "content": {"seat": "aisle"}}, {"action": "cancel", "content": None}, "'name' is missing"),
    (
        {"action": "accept", "content": {**GOOD, "name": ""}},
        {"action": "cancel", "content": None},
        "at least 1 characters",
    ),
    (
        {"action": "accept", "content": {**GOOD, "code": "a" * 64 + "b"}},
        {"action": "cancel", "content": None},
        "'code' must match",
    ),
    (
        {"action": "accept", "content": {**GOOD, "code": "aaaa"}},
        {"action": "accept", "content": {**GOOD, "code": "aaaa"}},
        None,
    ),
    (
        {"action": "accept", "content": {**GOOD, "pin": "1234"}},
        {"action": "cancel", "content": None},
        "'pin' is not a field",
    ),
]


async def test_a_servers_form_reaches_the_editor_and_the_answer_goes_back(tmp_path, crow_home):
    script = [reply for n in range(len(ANSWERS)) for reply in book(f"call_{n}")]
    async with ScriptedModel(script) as model, raw_crow(crow_env(crow_home, model.base_url), capabilities=FORM) as crow:
        sid = await session(crow, tmp_path)
        for n, (answer, seen, told) in enumerate(ANSWERS):
            prompt = await crow.send("session/prompt", prompt_params(sid))
            question = await next_question(crow, n)
            await reply_to(crow, question, answer)
            assert (await crow.answer(prompt))["result"]["stopReason"] == "end_turn"
            result = tool_result(model, f"call_{n}")
            assert (
                result.startswith("server saw ")
                and json.loads(result.removeprefix("server saw ").splitlines()[0]) == seen
            ), (n, result)
            assert (told is None) == (len(result.splitlines()) == 1) and (told is None or told in result), (n, result)
    params = questions(crow)[0]["params"]
    assert params["sessionId"] == sid and params["toolCallId"] == "call_0" and params["mode"] == "form"
    assert params["message"] == "The MCP server 'elicit' asks: Seat for flight LH1?"  # whose question it is
    assert params["requestedSchema"]["properties"]["seat"] == {
        "type": "string",
        "title": "Seat",
        "enum": ["aisle", "window"],
    }
    # While the question was open the call showed it, pending; answered, it ran on, then finished.
    statuses = [u.get("status") for u in crow.updates if u.get("toolCallId") == "call_0" and "status" in u]
    assert statuses == ["pending", "in_progress", "pending", "in_progress", "completed"], statuses
    waiting = [
        u for u in crow.updates if u.get("toolCallId") == "call_0" and u.get("status") == "pending" and u.get("content")
    ]
    assert (
        waiting[0]["content"][0]["content"]["text"]
        == "Waiting for your answer: The MCP server 'elicit' asks: Seat for flight LH1?"
    )
    assert problems(wire_messages(crow.received)) == []
    assert withdrawn(crow) == []  # every question was answered: none withdrawn


async def test_a_client_without_the_capability_is_never_asked_and_the_model_is_told(tmp_path, crow_home):
    async with (
        ScriptedModel(book("call_a")) as model,
        raw_crow(crow_env(crow_home, model.base_url), capabilities=URL) as crow,
    ):
        sid = await session(crow, tmp_path)
        assert (await crow.prompt(sid, "go"))["result"]["stopReason"] == "end_turn"
    assert questions(crow) == []
    result = tool_result(model, "call_a")
    assert result.startswith('server saw {"action": "decline", "content": null}'), result
    told = (
        "The MCP server 'elicit' asked for input the editor cannot show (a form); crow declined on the user's behalf."
    )
    assert result.splitlines()[1] == told, result
    assert "ask_user" not in tool_names(model.requests[0])  # no forms: the model cannot ask either


async def test_a_form_crow_cannot_show_is_declined(tmp_path, crow_home):
    script = [Reply(tool_calls=[ToolCall("elicit__nested", {}, id="call_n")]), Reply(text="done")]
    async with ScriptedModel(script) as model, raw_crow(crow_env(crow_home, model.base_url), capabilities=FORM) as crow:
        sid = await session(crow, tmp_path)
        assert (await crow.prompt(sid, "go"))["result"]["stopReason"] == "end_turn"
    assert questions(crow) == []
    assert "not a flat object of simple fields; crow declined" in tool_result(model, "call_n")


async def test_a_url_question(tmp_path, crow_home):
    """URL mode, at MCP 2026-07-28: the server's question has no id (that revision dropped it and the
    completion notice), so crow gives the editor one of its own."""
    script = [Reply(tool_calls=[ToolCall("elicit__login", {}, id="call_u")]), Reply(text="done")]
    async with ScriptedModel(script) as model, raw_crow(crow_env(crow_home, model.base_url), capabilities=URL) as crow:
        sid = await session(crow, tmp_path)
        prompt = await crow.send("session/prompt", prompt_params(sid))
        question = await next_question(crow, 0)
        await reply_to(crow, question, {"action": "accept"})
        assert (await crow.answer(prompt))["result"]["stopReason"] == "end_turn"
    params = dict(question["params"])
    assert params.pop("elicitationId")
    assert params == {"sessionId": sid, "toolCallId": "call_u", "mode": "url",
                      "message": "The MCP server 'elicit' asks (opens example.com): Sign in to continue",
                      "url": "https://example.com/login"}  # fmt: skip
    assert tool_result(model, "call_u") == 'server saw {"action": "accept", "content": null}'
    assert problems(wire_messages(crow.received)) == []


async def test_a_session_cancel_cancels_the_open_question(tmp_path, crow_home):
    script = [book("call_c")[0], *book("call_d")]  # the cancelled turn asks the model nothing more
    async with ScriptedModel(script) as model, raw_crow(crow_env(crow_home, model.base_url), capabilities=FORM) as crow:
        sid = await session(crow, tmp_path)
        prompt = await crow.send("session/prompt", prompt_params(sid))
        question = await next_question(crow, 0)
        await crow.notify("session/cancel", {"sessionId": sid})
        assert (await crow.answer(prompt))["result"]["stopReason"] == "cancelled"
        # The answer comes after crow stopped waiting: it reaches neither the server nor the model.
        await reply_to(crow, question, {"action": "accept", "content": GOOD})
        prompt = await crow.send("session/prompt", prompt_params(sid))
        await reply_to(crow, await next_question(crow, 1), {"action": "decline"})
        assert (await crow.answer(prompt))["result"]["stopReason"] == "end_turn"
    assert tool_result(model, "call_c") == "Cancelled by the user."
    assert withdrawn(crow) == [question["id"]]  # the editor is told to close the question
    assert tool_result(model, "call_d").startswith('server saw {"action": "decline"')
    assert [u.get("status") for u in crow.updates if u.get("toolCallId") == "call_c" and "status" in u][-1] == "failed"


async def test_an_answer_after_the_deadline_or_to_an_unknown_id_goes_nowhere(tmp_path, crow_home):
    write_config(crow_home, "[timeouts]\nelicitation = 1\n")
    script = [*book("call_t"), *book("call_v")]
    async with ScriptedModel(script) as model, raw_crow(crow_env(crow_home, model.base_url), capabilities=FORM) as crow:
        sid = await session(crow, tmp_path)
        assert (await crow.prompt(sid, "go"))["result"]["stopReason"] == "end_turn"  # nobody answers
        await reply_to(crow, questions(crow)[0], {"action": "accept", "content": GOOD})  # too late
        await reply_to(crow, {"id": 424242}, {"action": "accept", "content": GOOD})  # an id crow never used
        prompt = await crow.send("session/prompt", prompt_params(sid))
        await reply_to(crow, await next_question(crow, 1), {"action": "cancel"})
        assert (await crow.answer(prompt))["result"]["stopReason"] == "end_turn"
    first = tool_result(model, "call_t")
    assert first.startswith('server saw {"action": "cancel", "content": null}'), first
    assert "The user did not answer within 1 s; the question was cancelled." in first
    assert withdrawn(crow) == [questions(crow)[0]["id"]]
    assert tool_result(model, "call_v").startswith('server saw {"action": "cancel"')  # the late accept went nowhere


def ask(call_id: str, **arguments: Any) -> list[Reply]:
    return [Reply(tool_calls=[ToolCall("ask_user", arguments, id=call_id)]), Reply(text="thanks")]


async def test_ask_user_round_trip_in_plan_mode(tmp_path, crow_home):
    script = [
        *ask("call_q", question="Which database?", choices=["sqlite", "postgres"]),
        *ask("call_r", question="Why?"),
    ]
    async with ScriptedModel(script) as model, raw_crow(crow_env(crow_home, model.base_url), capabilities=FORM) as crow:
        sid = await crow.new_session(str(tmp_path))
        await crow.call("session/set_mode", {"sessionId": sid, "modeId": "plan"})
        prompt = await crow.send("session/prompt", prompt_params(sid))
        question = await next_question(crow, 0)
        await reply_to(crow, question, {"action": "accept", "content": {"answer": "postgres"}})
        assert (await crow.answer(prompt))["result"]["stopReason"] == "end_turn"
        prompt = await crow.send("session/prompt", prompt_params(sid))
        await reply_to(crow, await next_question(crow, 1), {"action": "decline"})
        assert (await crow.answer(prompt))["result"]["stopReason"] == "end_turn"
    assert "ask_user" in tool_names(model.requests[0])
    assert question["params"]["toolCallId"] == "call_q"
    assert question["params"]["requestedSchema"]["properties"]["answer"]["enum"] == ["sqlite", "postgres"]
    assert tool_result(model, "call_q") == "The user answered: postgres"
    assert tool_result(model, "call_r") == "The user declined to answer."
    assert not [m for m in crow.received if m.get("method") == "session/request_permission"]  # read-only: never asks
    assert problems(wire_messages(crow.received)) == []


async def test_ask_user_refuses_a_choice_not_offered(tmp_path, crow_home):
    async with ScriptedModel(ask("call_x", question="Pick", choices=["a", "b"])) as model:
        async with raw_crow(crow_env(crow_home, model.base_url), capabilities=FORM) as crow:
            sid = await crow.new_session(str(tmp_path))
            prompt = await crow.send("session/prompt", prompt_params(sid))
            await reply_to(crow, await next_question(crow, 0), {"action": "accept", "content": {"answer": "c"}})
            assert (await crow.answer(prompt))["result"]["stopReason"] == "end_turn"
    result = tool_result(model, "call_x")
    assert "refused (it does not fit the form: 'answer' must be one of ['a', 'b'])" in result, result
    assert "The user answered" not in result


async def test_questions_of_parallel_calls_are_each_scoped_to_their_own_call(tmp_path, crow_home):
    calls = [ToolCall("elicit__book", {"flight": flight}, id=f"call_{flight}") for flight in ("A1", "B2")]
    async with ScriptedModel([Reply(tool_calls=calls), Reply(text="done")]) as model:
        async with raw_crow(crow_env(crow_home, model.base_url), capabilities=FORM) as crow:
            sid = await session(crow, tmp_path)
            prompt = await crow.send("session/prompt", prompt_params(sid))
            await crow.wait_for(lambda c: len(questions(c)) == 2)  # both wait at once
            for question in questions(crow):
                seat = "aisle" if question["params"]["toolCallId"] == "call_A1" else "window"
                await reply_to(crow, question, {"action": "accept", "content": {"seat": seat, "name": "Ada"}})
            assert (await crow.answer(prompt))["result"]["stopReason"] == "end_turn"
    scoped = {q["params"]["toolCallId"]: q["params"]["message"] for q in questions(crow)}
    asks = "The MCP server 'elicit' asks: "
    assert scoped == {"call_A1": asks + "Seat for flight A1?", "call_B2": asks + "Seat for flight B2?"}
    assert '"seat": "aisle"' in tool_result(model, "call_A1") and '"seat": "window"' in tool_result(model, "call_B2")


async def test_the_time_the_user_takes_does_not_count_against_the_tool(tmp_path, crow_home):
    """The loop gives an MCP call timeouts.mcp_call + 5 s; a user who answers the server's question after
    longer than that still gets the call's result: the tool's clock stops while the question is open."""
    # The loop's limit on the call: 7 s. Not less: mcp_call is also the MCP client's clock for the server's own
    # time in the call (the SDK stops it while a person answers), which a busy machine can stretch past 0.1 s.
    write_config(crow_home, "[timeouts]\nmcp_call = 2\n")
    async with ScriptedModel(book("call_slow")) as model:
        async with raw_crow(crow_env(crow_home, model.base_url), capabilities=FORM) as crow:
            sid = await session(crow, tmp_path)
            prompt = await crow.send("session/prompt", prompt_params(sid))
            question = await next_question(crow, 0)
            await anyio.sleep(8)  # the user takes longer than the tool may
            await reply_to(crow, question, {"action": "accept", "content": GOOD})
            assert (await crow.answer(prompt))["result"]["stopReason"] == "end_turn"
    result = tool_result(model, "call_slow")
    assert result.startswith('server saw {"action": "accept"'), result
