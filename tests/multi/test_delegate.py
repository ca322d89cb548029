"""The `delegate` tool of a single crow session, over stdio with a raw client.

One scripted model serves the parent and its helpers. It answers each request by the prompt of the
turn asking (the parent's prompt, or the task a helper was given) and by how many times that turn
asked already, since the two are asked in no known order.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.helpers import crow_env
from support.matrix_support import last_prompt
from support.raw_wire import eventually, raw_crow
from support.zod_check import problems, wire_messages
from test_children import SUBAGENTS, children, ended, handoffs, said, sent, states

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio
Turn = Callable[[int], Reply]
"""A turn's answer to its n-th model request (0 first)."""


def by_prompt(model: ScriptedModel, turns: dict[str, Turn]) -> Callable[[dict], Reply]:
    def respond(request: dict) -> Reply:
        prompt = last_prompt(request)
        asked = sum(1 for r in model.requests if last_prompt(r) == prompt) - 1  # this one is recorded already
        return turns[prompt](asked)

    return respond


def delegate(task: str, call_id: str) -> ToolCall:
    return ToolCall("delegate", {"task": task}, id=call_id)


def parent_turn(*calls: ToolCall) -> Turn:
    return lambda n: Reply(tool_calls=list(calls)) if n == 0 else Reply(text="PARENT-DONE")


def configure(home: Path, max_depth: int = 2, mode: str = "ask") -> None:
    (home / "config.toml").write_text(
        f'[delegate]\nenabled = true\nagents = ["crow"]\nmax_depth = {max_depth}\n'
        f'[permissions]\ndefault_mode = "{mode}"\n'
    )


def crow_for(home: Path, model: ScriptedModel, cwd: Path, capabilities: dict | None) -> Any:
    return raw_crow(crow_env(home, model.base_url), cwd=cwd, capabilities=capabilities)


def tool_results(request: dict) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


def tool_names(request: dict) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools") or []]


def asked_by(model: ScriptedModel, prompt: str) -> list[dict]:
    return [r for r in model.requests if last_prompt(r) == prompt]


def helper_children(messages: list[dict[str, Any]]) -> dict[str, str]:
    """{task: child session id} of the delegations announced."""
    return {
        u["description"]: u["sessionId"]
        for _, _, u in sent(messages)
        if u.get("sessionUpdate") == "subagent_update" and "title" in u
    }


def waits_for_the_other(model: ScriptedModel, mine: str, other: str) -> Turn:
    """A helper that lists files, one model call after another, until the other task's helper has asked the
    model too; its answer says whether the two ran at once (bounded: one after the other ends too). Both
    wait for each other, so whichever asks first, only helpers running at once both answer "while"."""

    def turn(n: int) -> Reply:
        if asked_by(model, other):
            return Reply(text=f"ANSWER-{mine[-1]} while {other[-1]} ran")
        if n >= 40:
            return Reply(text=f"ANSWER-{mine[-1]} alone")
        return Reply(tool_calls=[ToolCall("list_files", {"path": "."}, id=f"spin_{mine[-1]}{n}")])

    return turn


async def test_two_delegations_run_at_once_as_child_sessions(crow_home, tmp_path):
    configure(crow_home)
    async with ScriptedModel() as model:
        model.default = by_prompt(
            model,
            {
                "go": parent_turn(delegate("TASK-A", "call_a"), delegate("TASK-B", "call_b")),
                "TASK-A": waits_for_the_other(model, "TASK-A", "TASK-B"),
                "TASK-B": waits_for_the_other(model, "TASK-B", "TASK-A"),
            },
        )
        async with crow_for(crow_home, model, tmp_path, SUBAGENTS) as crow:
            parent = await crow.new_session(str(tmp_path))
            answer = await crow.prompt(parent, "go")
            live = list(crow.received)
    assert answer["result"]["stopReason"] == "end_turn"
    # Both ran at once, and each answer came back as its call's result.
    results = {"call_a": "ANSWER-A while B ran", "call_b": "ANSWER-B while A ran"}
    assert tool_results(asked_by(model, "go")[-1]) == results
    # Each helper is a child session of the editor's: announced, handed its task, its own words on its own id.
    kids = helper_children(live)
    assert set(kids) == {"TASK-A", "TASK-B"} and set(children(live)) == {"crow"}
    a, b = kids["TASK-A"], kids["TASK-B"]
    for child in (a, b):
        assert states(live, child) == [("running", None), ("idle", "end_turn")]
    assert said(live, b) == "ANSWER-B while A ran" and said(live, a) == "ANSWER-A while B ran"
    assert sorted(handoffs(live)) == sorted([(a, parent, a, "TASK-A"), (b, parent, b, "TASK-B")])
    order = [last_prompt(r) for r in model.requests if last_prompt(r) in ("TASK-A", "TASK-B")]
    first = kids[order[0]]
    spins = {u["toolCallId"] for _, on, u in sent(live) if on == first and u.get("sessionUpdate") == "tool_call"}
    assert spins and all(call.startswith("spin_") for call in spins)  # the first to ask waited, on its own id
    assert said(live, parent) == "PARENT-DONE"
    assert problems(wire_messages(live)) == []


async def test_without_child_sessions_the_call_summarizes_the_helper(crow_home, tmp_path):
    configure(crow_home)
    async with ScriptedModel() as model:
        model.default = by_prompt(
            model,
            {
                "go": parent_turn(delegate("TASK-W", "call_w")),
                "TASK-W": lambda n: (
                    Reply(tool_calls=[ToolCall("write_file", {"path": "w.txt", "content": "hi"}, id="write_1")])
                    if n == 0
                    else Reply(text="WROTE-IT")
                ),
            },
        )
        async with crow_for(crow_home, model, tmp_path, None) as crow:
            parent = await crow.new_session(str(tmp_path))
            answer = await crow.prompt(parent, "go")
            live = list(crow.received)
    assert answer["result"]["stopReason"] == "end_turn"
    assert tool_results(asked_by(model, "go")[-1]) == {"call_w": "WROTE-IT"}
    flat = sent(live)
    assert {on for method, on, _ in flat if method.startswith("session/")} == {parent}
    assert not helper_children(live) and "WROTE-IT" not in said(live, parent)  # the child's words are not the parent's
    # Its permission question went to the parent's session, attributed, under the delegate call.
    asked = [
        (p["toolCall"]["toolCallId"], p["toolCall"]["title"]) for m, _, p in flat if m == "session/request_permission"
    ]
    assert [call for call, _ in asked] == ["call_w/write_1"] and asked[0][1].startswith("crow: ")
    assert (tmp_path / "w.txt").read_text() == "hi"
    shown = [
        c["content"]["text"]
        for _, _, u in flat
        if u.get("sessionUpdate") == "tool_call_update" and u.get("toolCallId") == "call_w"
        for c in u.get("content") or []
    ]
    assert any("Answer:\nWROTE-IT" in text and "w.txt" in text for text in shown)
    assert problems(wire_messages(live)) == []


async def test_a_plan_mode_parents_helper_cannot_write(crow_home, tmp_path):
    configure(crow_home, mode="full_access")  # a new session's mode, the helper's own too: only the parent's holds
    async with ScriptedModel() as model:
        model.default = by_prompt(
            model,
            {
                "go": parent_turn(delegate("TASK-W", "call_w")),
                "TASK-W": lambda n: (
                    Reply(tool_calls=[ToolCall("write_file", {"path": "w.txt", "content": "hi"}, id="write_1")])
                    if n == 0
                    else Reply(text="COULD-NOT-WRITE")
                ),
            },
        )
        async with crow_for(crow_home, model, tmp_path, SUBAGENTS) as crow:
            parent = await crow.new_session(str(tmp_path))
            mode = {"sessionId": parent, "configId": "mode", "value": "plan"}
            assert "result" in await crow.call("session/set_config_option", mode)
            answer = await crow.prompt(parent, "go")
            live = list(crow.received)
    assert answer["result"]["stopReason"] == "end_turn"
    assert not (tmp_path / "w.txt").exists()
    assert not [m for m, _, _ in sent(live) if m == "session/request_permission"]  # refused, not asked
    write_result = tool_results(asked_by(model, "TASK-W")[-1])["write_1"]
    assert "plan" in write_result.lower()
    assert tool_results(asked_by(model, "go")[-1]) == {"call_w": "COULD-NOT-WRITE"}


async def test_depth_is_bounded(crow_home, tmp_path):
    configure(crow_home, max_depth=1)
    async with ScriptedModel() as model:
        model.default = by_prompt(
            model,
            {"go": parent_turn(delegate("TASK-D", "call_d")), "TASK-D": lambda n: Reply(text="DEPTH-ONE")},
        )
        async with crow_for(crow_home, model, tmp_path, SUBAGENTS) as crow:
            parent = await crow.new_session(str(tmp_path))
            answer = await crow.prompt(parent, "go")
    assert answer["result"]["stopReason"] == "end_turn"
    assert "delegate" in tool_names(asked_by(model, "go")[0])
    assert "delegate" not in tool_names(asked_by(model, "TASK-D")[0])  # a helper at the bound cannot delegate
    assert tool_results(asked_by(model, "go")[-1]) == {"call_d": "DEPTH-ONE"}


async def test_cancelling_the_parents_turn_cancels_its_helpers(crow_home, tmp_path):
    configure(crow_home)
    async with ScriptedModel() as model:
        model.default = by_prompt(
            model,
            {"go": parent_turn(delegate("TASK-S", "call_s")), "TASK-S": lambda n: Reply(text="late", first_delay=60)},
        )
        async with crow_for(crow_home, model, tmp_path, SUBAGENTS) as crow:
            parent = await crow.new_session(str(tmp_path))
            request = await crow.send(
                "session/prompt", {"sessionId": parent, "prompt": [{"type": "text", "text": "go"}]}
            )
            await eventually(lambda: len(asked_by(model, "TASK-S")) == 1)
            await crow.notify("session/cancel", {"sessionId": parent})
            answer = await crow.answer(request)
            child = helper_children(crow.received)["TASK-S"]
            await crow.wait_for(lambda c: ("idle", "cancelled") in states(c.received, child))
            live = list(crow.received)
    assert answer["result"]["stopReason"] == "cancelled"
    assert "late" not in said(live, child)
    assert problems(wire_messages(live)) == []


async def test_a_reload_shows_the_helpers_sessions(crow_home, tmp_path):
    configure(crow_home)
    async with ScriptedModel() as model:
        turns = {"go": parent_turn(delegate("TASK-R", "call_r")), "TASK-R": lambda n: Reply(text="ANSWER-R")}
        model.default = by_prompt(model, turns)
        async with crow_for(crow_home, model, tmp_path, SUBAGENTS) as crow:
            parent = await crow.new_session(str(tmp_path))
            await crow.prompt(parent, "go")
            child = helper_children(crow.received)["TASK-R"]
            await ended(crow)
        async with crow_for(crow_home, model, tmp_path, SUBAGENTS) as crow:
            listed = await crow.call("session/list", {"cwd": str(tmp_path)})
            before = len(crow.received)
            load = {"sessionId": parent, "cwd": str(tmp_path), "mcpServers": []}
            assert "result" in await crow.call("session/load", load)
            replayed = crow.received[before:]
    # Helpers' sessions are no sessions of the editor's list; the reload announces each, then replays it.
    assert [s["sessionId"] for s in listed["result"]["sessions"]] == [parent]
    assert helper_children(replayed) == {"TASK-R": child}
    flat = sent(replayed)
    announced = next(i for i, (_, _, u) in enumerate(flat) if u.get("sessionUpdate") == "subagent_update")
    assert announced < min(i for i, (_, on, _) in enumerate(flat) if on == child)
    assert said(replayed, child) == "ANSWER-R" and said(replayed, parent) == "PARENT-DONE"
    assert problems(wire_messages(replayed)) == []
