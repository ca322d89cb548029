"""An MCP server's questions as the hostile probe asked them: the asking server is named, a URL shows its real
host (a Cyrillic lookalike in punycode), bidi characters are refused, one question of a call is open at a
time (not 300 at once), and a 1.4 MB form never reaches the editor. Over stdio with a real MCP server."""

from __future__ import annotations

from typing import Any

import pytest
from support.elicit_support import FORM, GOOD, URL, prompt_params, questions, reply_to, session, tool_result
from support.helpers import crow_env
from support.raw_wire import RawCrow, raw_crow
from support.zod_check import problems, wire_messages

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio


def one_call(name: str, arguments: dict[str, Any] | None = None) -> list[Reply]:
    return [Reply(tool_calls=[ToolCall(f"elicit__{name}", arguments or {}, id="c")]), Reply(text="done")]


def answered(crow: RawCrow, request_id: Any) -> bool:
    return any("method" not in m and m.get("id") == request_id for m in crow.received)


async def test_three_hundred_questions_of_one_call_reach_the_user_one_at_a_time_and_few(tmp_path, crow_home):
    async with (
        ScriptedModel(one_call("flood")) as model,
        raw_crow(crow_env(crow_home, model.base_url), capabilities=FORM) as crow,
    ):
        sid = await session(crow, tmp_path)
        prompt = await crow.send("session/prompt", prompt_params(sid))
        replied = 0
        while not answered(crow, prompt):
            await crow.wait_for(lambda c, seen=replied: answered(c, prompt) or len(questions(c)) > seen)
            assert len(questions(crow)) <= replied + 1, "a second question while one was open"
            if len(questions(crow)) > replied:
                await reply_to(crow, questions(crow)[replied], {"action": "accept", "content": GOOD})
                replied += 1
    assert 1 <= replied <= 8
    assert questions(crow)[0]["params"]["message"] == "The MCP server 'elicit' asks: Question 0?"
    result = tool_result(model, "c")
    assert "crow declined it" in result and result.count("crow declined") == 1  # told once, not 299 times
    assert problems(wire_messages(crow.received)) == []


async def test_a_huge_form_is_declined_before_the_editor(tmp_path, crow_home):
    async with (
        ScriptedModel(one_call("huge")) as model,
        raw_crow(crow_env(crow_home, model.base_url), capabilities=FORM) as crow,
    ):
        sid = await session(crow, tmp_path)
        assert (await crow.prompt(sid, "go"))["result"]["stopReason"] == "end_turn"
    assert questions(crow) == []
    assert "a form of 2000 fields (crow shows at most 32)" in tool_result(model, "c")


@pytest.mark.parametrize(
    ("url", "message", "shown", "told"),
    [
        (
            "https://\u0430pple.com/login",
            "Sign in",
            "The MCP server 'elicit' asks (opens xn--pple-43d.com): Sign in",
            None,
        ),
        ("https://example.com/\u202emoc.elppa", "Sign in", None, "a bidirectional control character (U+202E)"),
        ("https://example.com/login", "Sign in at \u202eelgoog", None, "a bidirectional control character (U+202E)"),
        ("https://example.com/\x07", "Sign in", None, "a control character (U+0007)"),
    ],
)
async def test_a_url_question_shows_the_real_host_and_no_bidi(tmp_path, crow_home, url, message, shown, told):
    async with (
        ScriptedModel(one_call("page", {"url": url, "message": message})) as model,
        raw_crow(crow_env(crow_home, model.base_url), capabilities=URL) as crow,
    ):
        sid = await session(crow, tmp_path)
        prompt = await crow.send("session/prompt", prompt_params(sid))
        if shown is not None:
            await crow.wait_for(lambda c: questions(c))
            assert questions(crow)[0]["params"]["message"] == shown
            await reply_to(crow, questions(crow)[0], {"action": "decline"})
        assert (await crow.answer(prompt))["result"]["stopReason"] == "end_turn"
    if told is not None:
        assert questions(crow) == [] and told in tool_result(model, "c")
