"""A MultiAgent's members as child sessions (ACP subagents), over stdio with a raw client.

A client that advertised `clientCapabilities.subagents` sees each member but the entry as a child of
its session: announced first, its own updates and permission questions under its own id, hand-offs
as `session_message`s, and a cancel of one child that the graph answers (a chain stops, parallel
siblings go on). A reload replays the same. A client that did not opt in sees the attributed,
flattened transcript. Every message crow sends is checked against the ACP SDK's zod schemas.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.helpers import text
from support.multi_support import AGENTS, multi_env, scripted
from support.raw_wire import RawCrow, eventually, raw_crow
from support.zod_check import problems, wire_messages

from crow_acp.testing import Reply, ToolCall

pytestmark = pytest.mark.anyio
SUBAGENTS = {"subagents": {}}


def chain_scripts() -> dict[str, list]:
    return {
        "coder": [Reply(text="CODE-DONE: wrote add()")],
        "reviewer": [
            Reply(text="Reading notes.", tool_calls=[ToolCall("read_file", {"path": "notes.txt"}, id="call_1")]),
            Reply(text="REVIEW: add() is fine"),
        ],
        "tester": [
            Reply(
                text="Writing.", tool_calls=[ToolCall("write_file", {"path": "out.txt", "content": "ok"}, id="call_1")]
            ),
            Reply(text="TESTS: pass"),
        ],
    }


def sent(messages: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, session id, update or params) of every notification and request crow sent."""
    out = []
    for m in messages:
        if "method" in m:
            params = m.get("params") or {}
            out.append((m["method"], params.get("sessionId", ""), params.get("update", params)))
    return out


def children(messages: list[dict[str, Any]]) -> dict[str, str]:
    """{title: child session id} as the subagent_updates announced them."""
    return {
        u["title"]: u["sessionId"]
        for method, _, u in sent(messages)
        if method == "session/update" and u.get("sessionUpdate") == "subagent_update" and "title" in u
    }


def said(messages: list[dict[str, Any]], sid: str) -> str:
    return "".join(
        u["content"]["text"]
        for method, on, u in sent(messages)
        if method == "session/update" and on == sid and u.get("sessionUpdate") == "agent_message_chunk"
    )


def handoffs(messages: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    """(session it came on, sender, recipient, text) of every session_message."""
    return [
        (on, u["senderSessionId"], u["recipientSessionId"], u["content"][0]["text"])
        for method, on, u in sent(messages)
        if method == "session/update" and u.get("sessionUpdate") == "session_message"
    ]


def states(messages: list[dict[str, Any]], child: str) -> list[tuple[str, Any]]:
    return [
        (u["state"]["state"], u["state"].get("stopReason"))
        for method, _, u in sent(messages)
        if method == "session/update" and u.get("sessionUpdate") == "subagent_update"
        and u["sessionId"] == child and "state" in u
    ]  # fmt: skip


def assert_announced_first(messages: list[dict[str, Any]], parent: str, child: str) -> None:
    """The spec's ordering rule: the announcing subagent_update comes before anything naming the child."""
    flat = sent(messages)
    announced = next(
        i for i, (_, on, u) in enumerate(flat)
        if on == parent and u.get("sessionUpdate") == "subagent_update" and u.get("sessionId") == child
    )  # fmt: skip
    naming = [
        i for i, (_, on, u) in enumerate(flat)
        if on == child or child in (u.get("senderSessionId"), u.get("recipientSessionId"))
    ]  # fmt: skip
    assert naming and announced < min(naming)


async def ended(crow: RawCrow) -> None:
    """Close crow's stdin, as an editor that quits does, and wait for its exit (raw_crow kills it otherwise)."""
    assert crow.proc.stdin is not None
    crow.proc.stdin.close()
    assert await crow.drain_to_exit() == 0


async def chain_crow(home: Path, models: dict, cwd: Path, capabilities: dict | None) -> Any:
    return raw_crow(multi_env(home, models), "--agent", f"{AGENTS}:build", cwd=cwd, capabilities=capabilities)


async def test_chain_members_are_child_sessions_live_and_on_reload(crow_home, tmp_path):
    (tmp_path / "notes.txt").write_text("NOTES")
    async with scripted(**chain_scripts()) as models:
        async with await chain_crow(crow_home, models, tmp_path, SUBAGENTS) as crow:
            parent = await crow.new_session(str(tmp_path))
            answer = await crow.prompt(parent, "write add")
            live = list(crow.received)
            await ended(crow)  # what it stores is durable before the reload
        assert answer["result"]["stopReason"] == "end_turn"
        kids = children(live)
        assert list(kids) == ["reviewer", "tester"]  # the entry (coder) is the parent itself
        reviewer, tester = kids["reviewer"], kids["tester"]
        assert len({parent, reviewer, tester}) == 3
        for child in (reviewer, tester):
            assert_announced_first(live, parent, child)
            assert states(live, child) == [("running", None), ("idle", "end_turn")]
        # Each member's own words on its own session, unlabelled.
        assert said(live, parent) == "CODE-DONE: wrote add()"
        assert said(live, reviewer) == "Reading notes.REVIEW: add() is fine"
        assert said(live, tester) == "Writing.TESTS: pass"
        assert "**" not in said(live, parent) + said(live, reviewer) + said(live, tester)
        # Hand-offs are messages from one member's session to the next one's.
        assert handoffs(live) == [
            (reviewer, parent, reviewer, "CODE-DONE: wrote add()"),
            (tester, reviewer, tester, "REVIEW: add() is fine"),
        ]
        # Tool calls, permission questions and usage carry the child's id; the parent keeps the hand-off calls.
        flat = sent(live)
        tool_calls = {(on, u["toolCallId"]) for m, on, u in flat if u.get("sessionUpdate") == "tool_call"}
        assert {(reviewer, "call_1"), (tester, "call_1")} <= tool_calls
        asked = [(on, p["toolCall"]["toolCallId"]) for m, on, p in flat if m == "session/request_permission"]
        assert asked == [(tester, "call_1")]
        assert (tmp_path / "out.txt").read_text() == "ok"
        usage = {on for m, on, u in flat if u.get("sessionUpdate") == "usage_update"}
        assert {parent, reviewer, tester} <= usage
        # A child is no session of its own to the editor: no title, commands or mode of its own.
        kinds = {u.get("sessionUpdate") for m, on, u in flat if on in (reviewer, tester)}
        assert kinds.isdisjoint({"session_info_update", "available_commands_update", "current_mode_update"})
        assert problems(wire_messages(live)) == []

        async with await chain_crow(crow_home, models, tmp_path, SUBAGENTS) as crow:
            # A child is no session a client may load or delete (the spec restricts them; crow refuses).
            for method in ("session/load", "session/delete"):
                refused = await crow.call(method, {"sessionId": reviewer, "cwd": str(tmp_path), "mcpServers": []})
                assert refused["error"]["code"] == -32002, refused
            before = len(crow.received)
            reply = await crow.call("session/load", {"sessionId": parent, "cwd": str(tmp_path), "mcpServers": []})
            assert "result" in reply
            replayed = crow.received[before:]
    # The reload: the children announced before anything else, then the same histories and hand-offs.
    assert children(replayed) == kids
    first = [u.get("sessionUpdate") for m, _, u in sent(replayed)[:2]]
    assert first == ["subagent_update", "subagent_update"]
    for child in (reviewer, tester):
        assert_announced_first(replayed, parent, child)
    for sid in (parent, reviewer, tester):
        assert said(replayed, sid) == said(live, sid)
    assert handoffs(replayed) == handoffs(live)
    assert problems(wire_messages(replayed)) == []


async def test_a_client_that_did_not_opt_in_sees_the_attributed_transcript(crow_home, tmp_path):
    (tmp_path / "notes.txt").write_text("NOTES")
    async with scripted(**chain_scripts()) as models:
        async with await chain_crow(crow_home, models, tmp_path, None) as crow:
            parent = await crow.new_session(str(tmp_path))
            answer = await crow.prompt(parent, "write add")
            live = list(crow.received)
    assert answer["result"]["stopReason"] == "end_turn"
    flat = sent(live)
    assert {on for m, on, _ in flat if m in ("session/update", "session/request_permission")} == {parent}
    kinds = {u.get("sessionUpdate") for _, _, u in flat}
    assert kinds.isdisjoint({"subagent_update", "session_message", "session_message_chunk"})
    words = said(live, parent)
    assert words.index("**coder:** ") < words.index("**reviewer:** ") < words.index("**tester:** TESTS: pass")
    asked = [p["toolCall"]["toolCallId"] for m, _, p in flat if m == "session/request_permission"]
    assert asked == ["tester/call_1"]
    assert problems(wire_messages(live)) == []


async def cancel_child_when_asked(crow: RawCrow, models: dict, parent: str, name: str) -> dict[str, Any]:
    """Prompt, wait until `name`'s model call is under way, cancel its child session; the prompt's answer."""
    request = await crow.send("session/prompt", {"sessionId": parent, "prompt": [text("go").model_dump()]})
    await eventually(lambda: len(models[name].requests) == 1)
    await crow.wait_for(lambda c: name in children(c.received))
    await crow.notify("session/cancel", {"sessionId": children(crow.received)[name]})
    return await crow.answer(request)


async def test_cancel_of_one_child_stops_a_chain(crow_home, tmp_path):
    scripts = {
        "coder": [Reply(text="CODE-DONE")],
        "reviewer": [Reply(text="slow review", first_delay=60)],
        "tester": [Reply(text="TESTS")],
    }
    async with scripted(**scripts) as models:
        async with await chain_crow(crow_home, models, tmp_path, SUBAGENTS) as crow:
            parent = await crow.new_session(str(tmp_path))
            answer = await cancel_child_when_asked(crow, models, parent, "reviewer")
            live = list(crow.received)
    assert answer["result"]["stopReason"] == "cancelled"
    kids = children(live)
    assert states(live, kids["reviewer"]) == [("running", None), ("idle", "cancelled")]
    assert models["tester"].requests == [] and states(live, kids["tester"]) == []
    assert [recipient for _, _, recipient, _ in handoffs(live)] == [kids["reviewer"]]
    assert problems(wire_messages(live)) == []


async def test_cancel_of_one_child_lets_its_parallel_siblings_go_on(crow_home, tmp_path):
    scripts = {
        "alpha": [Reply(text="ALPHA-RESULT")],
        "beta": [Reply(text="slow beta", first_delay=60)],
        "gamma": [Reply(text="GAMMA-RESULT")],
        "merger": [Reply(text="MERGED")],
    }
    async with scripted(**scripts) as models:
        env = multi_env(crow_home, models)
        async with raw_crow(env, "--agent", f"{AGENTS}:build_parallel", cwd=tmp_path, capabilities=SUBAGENTS) as crow:
            parent = await crow.new_session(str(tmp_path))
            answer = await cancel_child_when_asked(crow, models, parent, "beta")
            live = list(crow.received)
    assert answer["result"]["stopReason"] == "end_turn"
    kids = children(live)
    assert list(kids) == ["alpha", "beta", "gamma"]  # the fan-in (merger) is the entry: the parent
    assert states(live, kids["beta"])[-1] == ("idle", "cancelled")
    assert states(live, kids["alpha"])[-1] == states(live, kids["gamma"])[-1] == ("idle", "end_turn")
    merged = models["merger"].requests[0]["messages"][-1]["content"]
    assert "ALPHA-RESULT" in merged and "GAMMA-RESULT" in merged and "beta (failed: cancelled)" in merged
    assert said(live, parent) == "MERGED"
    assert problems(wire_messages(live)) == []
