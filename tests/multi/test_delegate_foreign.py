"""The `delegate` tool with another ACP agent as the helper: `[delegate] agents = ["crow", "reviewer"]`, where
`[agents.reviewer]` runs tests/agents/foreign_acp_agent.py (a minimal agent on the `acp` SDK; what it does
depends on the task's first word). Crow over stdio, a raw client as the editor.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from support.helpers import crow_env
from support.raw_wire import raw_crow
from support.zod_check import problems, wire_messages
from test_children import SUBAGENTS, ended, handoffs, said, sent, states
from test_delegate import asked_by, by_prompt, helper_children, parent_turn, tool_results

from crow_acp import load_config
from crow_acp.errors import ConfigError
from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio
MEMBER = Path(__file__).parents[1] / "agents" / "foreign_acp_agent.py"
FS = {"fs": {"readTextFile": True, "writeTextFile": True}}


def configure(home: Path, log: Path, mode: str = "ask") -> None:
    command = json.dumps([sys.executable, str(MEMBER)])
    (home / "config.toml").write_text(
        f'[delegate]\nenabled = true\nagents = ["crow", "reviewer"]\n'
        f'[permissions]\ndefault_mode = "{mode}"\n'
        f"[agents.reviewer]\ncommand = {command}\nenv = {{ FOREIGN_LOG = {json.dumps(str(log))} }}\n"
    )


def to_reviewer(task: str, call_id: str) -> ToolCall:
    return ToolCall("delegate", {"task": task, "agent": "reviewer"}, id=call_id)


def member_calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def choose(option: str | None):
    """The editor's answer to a permission question: `option` if offered, None: the question cancelled."""

    def answer(params: dict) -> dict:
        offered = [o["optionId"] for o in params["options"]]
        if option is None or option not in offered:
            return {"outcome": "cancelled"}
        return {"outcome": "selected", "optionId": option}

    return answer


def crow_for(home: Path, model: ScriptedModel, cwd: Path, capabilities: dict | None) -> Any:
    return raw_crow(crow_env(home, model.base_url), cwd=cwd, capabilities=capabilities)


async def test_a_foreign_helper_runs_the_task_as_a_child_session(crow_home, tmp_path):
    log = tmp_path / "member.jsonl"
    configure(crow_home, log)
    async with ScriptedModel() as model:
        model.default = by_prompt(model, {"go": parent_turn(to_reviewer("review add()", "call_r"))})
        async with crow_for(crow_home, model, tmp_path, SUBAGENTS) as crow:
            parent = await crow.new_session(str(tmp_path))
            answer = await crow.prompt(parent, "go")
            live = list(crow.received)
    assert answer["result"]["stopReason"] == "end_turn"
    # The foreign agent's answer is the call's result; crow's model never ran the task.
    assert tool_results(asked_by(model, "go")[-1]) == {"call_r": "ECHO: review add()"}
    assert not asked_by(model, "review add()")
    assert [c["text"] for c in member_calls(log) if c["event"] == "prompt"] == ["review add()"]
    assert [c["cwd"] for c in member_calls(log) if c["event"] == "new_session"] == [str(tmp_path)]
    child = helper_children(live)["review add()"]
    titles = [u["title"] for _, _, u in sent(live) if u.get("sessionUpdate") == "subagent_update" and "title" in u]
    assert titles == ["reviewer"]
    assert states(live, child) == [("running", None), ("idle", "end_turn")]
    assert handoffs(live) == [(child, parent, child, "review add()")]
    assert said(live, child) == "ECHO: review add()" and said(live, parent) == "PARENT-DONE"
    assert problems(wire_messages(live)) == []


@pytest.mark.parametrize("capabilities", [SUBAGENTS, None], ids=["child-session", "flat"])
@pytest.mark.parametrize(("option", "member_sees"), [("yes", "ALLOWED:yes"), (None, "REJECTED")])
async def test_its_permission_question_goes_to_the_editor_and_fails_closed(
    crow_home, tmp_path, capabilities, option, member_sees
):
    configure(crow_home, tmp_path / "member.jsonl")
    async with ScriptedModel() as model:
        model.default = by_prompt(model, {"go": parent_turn(to_reviewer("ASK now", "call_p"))})
        async with crow_for(crow_home, model, tmp_path, capabilities) as crow:
            crow.permission = choose(option)
            parent = await crow.new_session(str(tmp_path))
            answer = await crow.prompt(parent, "go")
            live = list(crow.received)
    assert answer["result"]["stopReason"] == "end_turn"
    assert tool_results(asked_by(model, "go")[-1]) == {"call_p": member_sees}
    [(on, asked)] = [(on, p) for m, on, p in sent(live) if m == "session/request_permission"]
    assert [o["optionId"] for o in asked["options"]] == ["yes", "no"]
    if capabilities:  # under the child's own id, as it asked it
        child = helper_children(live)["ASK now"]
        assert on == child and asked["toolCall"]["toolCallId"] == "call_1"
    else:  # on the parent's session, attributed, under the delegate call, and summarized in its content
        assert on == parent and not helper_children(live)
        assert asked["toolCall"]["toolCallId"] == "call_p/call_1"
        assert asked["toolCall"]["title"] == "reviewer: Delete everything"
        shown = [
            c["content"]["text"]
            for _, _, u in sent(live)
            if u.get("sessionUpdate") == "tool_call_update" and u.get("toolCallId") == "call_p"
            for c in u.get("content") or []
        ]
        assert any(f"Answer:\n{member_sees}" in text for text in shown)
    assert problems(wire_messages(live)) == []


async def test_its_options_show_names_that_agree_with_their_kinds(crow_home, tmp_path):
    configure(crow_home, tmp_path / "member.jsonl")
    async with ScriptedModel() as model:
        model.default = by_prompt(model, {"go": parent_turn(to_reviewer("LIAR now", "call_l"))})
        async with crow_for(crow_home, model, tmp_path, None) as crow:
            crow.permission = choose("deny")
            parent = await crow.new_session(str(tmp_path))
            await crow.prompt(parent, "go")
            live = list(crow.received)
    [asked] = [p for m, _, p in sent(live) if m == "session/request_permission"]
    shown = [(o["optionId"], o["name"], o["kind"]) for o in asked["options"]]
    assert shown == [
        ("deny", "Always allow", "allow_always"),  # a "Deny" that allows forever is shown as what it does
        ("once", "Allow", "allow_once"),
        ("fine", "Allow this time", "allow_once"),
        ("no", "Reject", "reject_once"),
        ("never", "No, never", "reject_always"),
    ]
    assert tool_results(asked_by(model, "go")[-1]) == {"call_l": "ALLOWED:deny"}  # the member's id, unchanged


def plan_parent_turn(n: int) -> Reply:
    calls = [to_reviewer("ASK now", "call_ask"), to_reviewer("WRITE w.txt", "call_write")]
    return Reply(tool_calls=[calls[n]]) if n < len(calls) else Reply(text="PARENT-DONE")


async def test_a_plan_mode_parents_foreign_helper_cannot_change_anything(crow_home, tmp_path):
    """Its changing question is refused unasked, and its fs write never reaches the editor, whatever the
    helper's own default mode (full_access here) and however willing the editor is."""
    configure(crow_home, tmp_path / "member.jsonl", mode="full_access")
    async with ScriptedModel() as model:
        model.default = by_prompt(model, {"go": plan_parent_turn})
        async with crow_for(crow_home, model, tmp_path, {**SUBAGENTS, **FS}) as crow:
            crow.permission = choose("yes")
            parent = await crow.new_session(str(tmp_path))
            mode = {"sessionId": parent, "configId": "mode", "value": "plan"}
            assert "result" in await crow.call("session/set_config_option", mode)
            answer = await crow.prompt(parent, "go")
            live = list(crow.received)
    assert answer["result"]["stopReason"] == "end_turn"
    assert not [m for m, _, _ in sent(live) if m in ("session/request_permission", "fs/write_text_file")]
    results = tool_results(asked_by(model, "go")[-1])
    assert results["call_ask"] == "REJECTED"
    assert results["call_write"].startswith("WRITE REFUSED") and "plan mode" in results["call_write"]
    assert not (tmp_path / "w.txt").exists()


async def test_cancelling_the_parents_turn_reaches_the_foreign_helper(crow_home, tmp_path):
    log = tmp_path / "member.jsonl"
    configure(crow_home, log)
    async with ScriptedModel() as model:
        model.default = by_prompt(model, {"go": parent_turn(to_reviewer("HANG", "call_h"))})
        async with crow_for(crow_home, model, tmp_path, SUBAGENTS) as crow:
            parent = await crow.new_session(str(tmp_path))
            prompt = {"sessionId": parent, "prompt": [{"type": "text", "text": "go"}]}
            request = await crow.send("session/prompt", prompt)
            await crow.wait_for(
                lambda c: any(said(c.received, kid) == "HANGING" for kid in helper_children(c.received).values())
            )
            await crow.notify("session/cancel", {"sessionId": parent})
            answer = await crow.answer(request)
            child = helper_children(crow.received)["HANG"]
            await crow.wait_for(lambda c: ("idle", "cancelled") in states(c.received, child))
            live = list(crow.received)
    assert answer["result"]["stopReason"] == "cancelled"
    events = [c["event"] for c in member_calls(log)]
    assert "cancel" in events and events.index("cancel") > events.index("prompt")
    assert problems(wire_messages(live)) == []


async def test_a_helper_that_crashes_fails_the_call_and_the_parent_goes_on(crow_home, tmp_path):
    configure(crow_home, tmp_path / "member.jsonl")
    async with ScriptedModel() as model:
        model.default = by_prompt(model, {"go": parent_turn(to_reviewer("CRASH", "call_c"))})
        async with crow_for(crow_home, model, tmp_path, SUBAGENTS) as crow:
            parent = await crow.new_session(str(tmp_path))
            answer = await crow.prompt(parent, "go")
            live = list(crow.received)
    assert answer["result"]["stopReason"] == "end_turn" and said(live, parent) == "PARENT-DONE"
    result = tool_results(asked_by(model, "go")[-1])["call_c"]
    assert result.startswith("the helper failed:") and "member reviewer failed: exited with status 3" in result
    child = helper_children(live)["CRASH"]
    assert states(live, child) == [("running", None), ("idle", "error")]
    assert "ABOUT TO CRASH" in said(live, child)
    assert problems(wire_messages(live)) == []


async def test_a_reload_announces_the_foreign_helper_and_replays_it(crow_home, tmp_path):
    configure(crow_home, tmp_path / "member.jsonl")
    async with ScriptedModel() as model:
        model.default = by_prompt(model, {"go": parent_turn(to_reviewer("review it", "call_r"))})
        async with crow_for(crow_home, model, tmp_path, SUBAGENTS) as crow:
            parent = await crow.new_session(str(tmp_path))
            await crow.prompt(parent, "go")
            child = helper_children(crow.received)["review it"]
            await ended(crow)
        async with crow_for(crow_home, model, tmp_path, SUBAGENTS) as crow:
            listed = await crow.call("session/list", {"cwd": str(tmp_path)})
            before = len(crow.received)
            load = {"sessionId": parent, "cwd": str(tmp_path), "mcpServers": []}
            assert "result" in await crow.call("session/load", load)
            replayed = crow.received[before:]
    assert [s["sessionId"] for s in listed["result"]["sessions"]] == [parent]
    assert helper_children(replayed) == {"review it": child}
    flat = sent(replayed)
    announced = next(i for i, (_, _, u) in enumerate(flat) if u.get("sessionUpdate") == "subagent_update")
    assert flat[announced][2]["title"] == "reviewer"
    assert announced < min(i for i, (_, on, _) in enumerate(flat) if on == child)
    assert said(replayed, child) == "ECHO: review it" and said(replayed, parent) == "PARENT-DONE"
    assert problems(wire_messages(replayed)) == []


def test_a_helper_that_is_neither_crow_nor_declared_is_a_config_error(crow_home, tmp_path):
    configure(crow_home, tmp_path / "member.jsonl")
    text = (crow_home / "config.toml").read_text().replace('"reviewer"]', '"reviewr"]')
    (crow_home / "config.toml").write_text(text)
    with pytest.raises(ConfigError, match=r"no helper 'reviewr'; declared: crow, reviewer"):
        load_config(crow_home)
