"""Resuming a cut turn (issue 31, item 4): `crow acp` is SIGKILLed mid-turn, started again, the session
loaded. The load marks the cut for the user, `/continue` is offered, and it resumes the turn with a history
valid for the strictest provider, every message checked by zod."""

from __future__ import annotations

import signal
from typing import Any

import pytest
from support import spawn
from support.helpers import CORE_AGENT, TESTS, assert_strict_pairing, crow_env
from support.history_checks import stored_rows
from support.raw_wire import RawCrow, eventually, raw_crow
from support.zod_check import problems, wire_messages

from crow_acp.core.cut_turn import GO_ON
from crow_acp.core.session import INTERRUPTED
from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio
GATE = {"name": "gate", "command": spawn.python(), "args": [str(TESTS / "mcp_servers" / "gate_server.py")], "env": []}


def chunks(crow: RawCrow) -> list[str]:
    return [u["content"]["text"] for u in crow.updates if u["sessionUpdate"] == "agent_message_chunk"]


def commands(crow: RawCrow) -> list[str]:
    offered = [u["availableCommands"] for u in crow.updates if u["sessionUpdate"] == "available_commands_update"]
    return [command["name"] for listing in offered for command in listing]


def tool_running(crow: RawCrow) -> bool:
    return any(u.get("toolCallId") == "waits" and u.get("status") == "in_progress" for u in crow.updates)


CUTS: dict[str, Any] = {
    "mid-tool": (
        Reply(tool_calls=[ToolCall("gate__wait_for", {"path": "/nonexistent/gate"}, id="waits")]),
        tool_running,
        "a tool call was interrupted",
    ),
    "mid-stream": (
        Reply(text="part " * 400, chunks=400, delay=0.01, hold_after=60),
        lambda crow: len(chunks(crow)) >= 59,  # held after them, more than 0.25 s in: a draft is stored
        "the reply was cut off while it streamed",
    ),
    "before the reply": (Reply(text="never shown", hold_after=1), None, "your last message has no answer"),
}


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
@pytest.mark.parametrize("where", list(CUTS))
async def test_continue_resumes_a_turn_cut_by_a_kill_or_a_shutdown(crow_home, tmp_path, where, stop):
    entry, ready, how = CUTS[where]
    with ScriptedModel([entry]) as model:
        env = crow_env(crow_home, model.base_url)
        async with raw_crow(env, "--agent", CORE_AGENT) as crow:
            new = await crow.call("session/new", {"cwd": str(tmp_path), "mcpServers": [GATE]})
            sid = new["result"]["sessionId"]
            await crow.send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]})
            if ready is None:
                await eventually(lambda: len(model.requests) == 1)
            else:
                await crow.wait_for(ready)
            crow.signal(stop)  # SIGTERM: crow cancels the turn and exits 0, recording it as cut, not as the user's
            assert await crow.drain_to_exit() == (-signal.SIGKILL if stop == signal.SIGKILL else 0)
        model.add(Reply(text="resumed"))
        async with raw_crow(env, "--agent", CORE_AGENT) as crow:
            loaded = await crow.call("session/load", {"cwd": str(tmp_path), "sessionId": sid, "mcpServers": [GATE]})
            assert "result" in loaded, loaded
            mark = f"The last turn was cut off: {how} (crow stopped before it finished). Send /continue to resume it."
            await crow.wait_for(lambda c: mark in chunks(c) and "continue" in commands(c))
            answer = await crow.prompt(sid, "/continue")
            again = await crow.prompt(sid, "/continue")  # the turn ended: nothing more to resume
            live = list(crow.received)
    assert answer["result"]["stopReason"] == "end_turn"
    assert again["result"]["stopReason"] == "end_turn" and "Nothing to continue: the last turn finished." in chunks(
        crow
    )
    assert len(model.requests) == 2
    messages = model.requests[1]["messages"]
    assert_strict_pairing(messages)
    if where == "mid-tool":
        assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
        assert messages[2] == {"role": "tool", "tool_call_id": "waits", "content": INTERRUPTED}
    elif where == "mid-stream":
        assert [m["role"] for m in messages] == ["user", "assistant", "user"]
        assert messages[1]["content"].startswith("part part") and messages[2]["content"] == GO_ON
    else:
        assert messages == [{"role": "user", "content": "go"}]
    assert stored_rows(crow_home, sid)[-1][0] == {"role": "assistant", "content": "resumed"}
    sent = [("zPromptResponse", answer["result"]), ("zPromptResponse", again["result"])]
    assert problems(wire_messages(live) + sent) == []


async def test_a_finished_turn_is_not_marked_and_continue_says_so(crow_home, tmp_path):
    with ScriptedModel([Reply(text="done")]) as model:
        env = crow_env(crow_home, model.base_url)
        async with raw_crow(env, "--agent", CORE_AGENT) as crow:
            sid = await crow.new_session(str(tmp_path))
            assert (await crow.prompt(sid, "hi"))["result"]["stopReason"] == "end_turn"
        async with raw_crow(env, "--agent", CORE_AGENT) as crow:
            await crow.call("session/load", {"cwd": str(tmp_path), "sessionId": sid, "mcpServers": []})
            await crow.wait_for(lambda c: "continue" in commands(c))
            answer = await crow.prompt(sid, "/continue")
    assert answer["result"]["stopReason"] == "end_turn"
    assert not any("cut off" in text for text in chunks(crow))
    assert chunks(crow)[-1] == "Nothing to continue: the last turn finished."
    assert len(model.requests) == 1
