"""Crow's own warnings as `notice` updates (ACP 1.25), over stdio, for a client that advertises
`session.notices`; any other client sees what it saw before. Never stored, never replayed. Every
message crow sends is checked against the zod schemas of @agentclientprotocol/sdk 2.4.0."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from support.helpers import crow_env, write_config
from support.raw_wire import raw_crow
from support.zod_check import problems, wire_messages

from crow_acp.acp.prompt.mcp import CONNECTING
from crow_acp.acp.sessions.leases import SESSION_BUSY
from crow_acp.acp.updates.warnings import CONFIG_WARNING, MODEL_ERROR, TAKEN_OVER
from crow_acp.model.retries import MODEL_RETRY
from crow_acp.testing import Fault, Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio

NOTICES = {"session": {"notices": {}}}
LIVE = Path(__file__).resolve().parents[1] / "mcp_servers" / "live_server.py"
LIVE_SERVER = {"name": "live", "command": sys.executable, "args": [str(LIVE)], "env": []}


def notices(updates: list[dict[str, Any]]) -> list[tuple[str, str, str | None]]:
    return [(u["severity"], u["title"], u.get("description")) for u in updates if u["sessionUpdate"] == "notice"]


def reports(updates: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    """crow's warnings shown as tool calls: started with no raw input (not a call of the model's), and not
    the progress step every client sees while the MCP servers start."""
    kinds = ("tool_call", "tool_call_update")
    ids = {
        u["toolCallId"]
        for u in updates
        if u["sessionUpdate"] == "tool_call" and "rawInput" not in u and u["title"] != CONNECTING
    }
    return [
        (u.get("title"), u.get("status")) for u in updates if u["sessionUpdate"] in kinds and u["toolCallId"] in ids
    ]


@pytest.mark.parametrize("opted_in", [True, False], ids=["notices", "older_client"])
async def test_an_mcp_server_that_dies_mid_session_is_told(crow_home, tmp_path, opted_in):
    script = [
        Reply(tool_calls=[ToolCall("live__die", {})]),
        Reply(text="it died"),
        Reply(tool_calls=[ToolCall("live__ping", {})]),
        Reply(text="it is back"),
    ]
    async with ScriptedModel(script) as model:
        async with raw_crow(crow_env(crow_home, model.base_url), capabilities=NOTICES if opted_in else {}) as crow:
            reply = await crow.call("session/new", {"cwd": str(tmp_path), "mcpServers": [LIVE_SERVER]})
            sid = reply["result"]["sessionId"]
            assert (await crow.prompt(sid, "kill it"))["result"]["stopReason"] == "end_turn"
            died = len(crow.updates)
            assert (await crow.prompt(sid, "use it again"))["result"]["stopReason"] == "end_turn"
            assert problems(wire_messages(crow.received)) == []
            first, second = crow.updates[:died], crow.updates[died:]
    if opted_in:
        [(severity, title, description)] = notices(first)
        assert (severity, title) == ("warning", "MCP server 'live' is unavailable") and description
        assert notices(second) == [
            ("info", "Restarting MCP server 'live'", None),
            ("info", "Restarted MCP server 'live'", None),
        ]
        assert not reports(first + second), "no tool-call reports for a client that takes notices"
    else:
        assert not notices(first + second)
        assert reports(first) == [("MCP server 'live' is unavailable", "failed")]
        assert reports(second) == [
            ("Restarting MCP server 'live'", "in_progress"),
            ("Restarted MCP server 'live'", "completed"),
        ]


@pytest.mark.parametrize("opted_in", [True, False], ids=["notices", "older_client"])
async def test_a_model_retry_and_a_model_error_are_told(crow_home, tmp_path, opted_in):
    write_config(crow_home, "max_retries = 1\n")
    script = [Fault(503, retry_after=0.01), Reply(text="second try"), Fault(400, "no such model")]
    async with ScriptedModel(script) as model:
        async with raw_crow(crow_env(crow_home, model.base_url), capabilities=NOTICES if opted_in else {}) as crow:
            sid = await crow.new_session(str(tmp_path))
            assert (await crow.prompt(sid, "hello"))["result"]["stopReason"] == "end_turn"
            failed = await crow.prompt(sid, "again")
            assert problems(wire_messages(crow.received)) == []
            shown = notices(crow.updates)
    assert "no such model" in failed["error"]["message"], "the prompt's error is unchanged"
    if opted_in:
        assert shown[0] == ("warning", MODEL_RETRY, "Retry 1 of 1 (HTTP 503).")
        assert [(severity, title) for severity, title, _ in shown[1:]] == [("error", MODEL_ERROR)]
        assert "no such model" in (shown[1][2] or "")
    else:
        assert shown == [] and reports(crow.updates) == []


@pytest.mark.parametrize("opted_in", [True, False], ids=["notices", "older_client"])
async def test_a_lost_lease_is_told(crow_home, tmp_path, opted_in):
    write_config(crow_home, "[store]\nlease_ttl = 3600\n")
    async with ScriptedModel(default=Reply(text="ok")) as model:
        env = crow_env(crow_home, model.base_url)
        async with raw_crow(env, capabilities=NOTICES if opted_in else {}) as a, raw_crow(env) as b:
            sid = await a.new_session(str(tmp_path))
            assert (await a.prompt(sid, "hello"))["result"]["stopReason"] == "end_turn"
            with sqlite3.connect(crow_home / "sessions.db") as db:  # A stalled past its lease
                db.execute("UPDATE leases SET expires_at = 0 WHERE session_id = ?", (sid,))
            assert "result" in await b.call("session/load", {"cwd": str(tmp_path), "sessionId": sid, "mcpServers": []})
            refused = await a.prompt(sid, "still mine?")
            assert refused["error"]["code"] == SESSION_BUSY
            assert problems(wire_messages(a.received)) == []
            shown = notices(a.updates)
    if opted_in:
        [(severity, title, description)] = shown
        assert (severity, title) == ("error", TAKEN_OVER) and "another crow process" in (description or "")
    else:
        assert shown == []


async def test_config_and_skill_warnings_are_told_and_never_replayed(crow_home, tmp_path):
    write_config(crow_home, 'model = "fast"\n[models.default]\nmodel = "m"\n')
    broken = tmp_path / ".agents" / "skills" / "broken"
    broken.mkdir(parents=True)
    (broken / "SKILL.md").write_text("no front matter\n")
    async with ScriptedModel(default=Reply(text="ok")) as model:
        env = crow_env(crow_home, model.base_url)
        async with raw_crow(env, capabilities=NOTICES) as crow:
            sid = await crow.new_session(str(tmp_path))
            await crow.prompt(sid, "hello")
            assert problems(wire_messages(crow.received)) == []
            shown = notices(crow.updates)
        assert [title for _, title, _ in shown] == ["A skill was skipped", CONFIG_WARNING]
        assert "'fast' is not a profile" in (shown[1][2] or "")
        async with raw_crow(env) as older:  # a client without notices: nothing new, on load as before
            reply = await older.call("session/load", {"cwd": str(tmp_path), "sessionId": sid, "mcpServers": []})
            assert "result" in reply
            assert notices(older.updates) == [] and reports(older.updates) == []
        async with raw_crow(env, capabilities=NOTICES) as again:  # told again on load, not replayed from history
            await again.call("session/load", {"cwd": str(tmp_path), "sessionId": sid, "mcpServers": []})
            await again.wait_for(lambda c: len(notices(c.updates)) == 2)
            assert [title for _, title, _ in notices(again.updates)] == ["A skill was skipped", CONFIG_WARNING]


async def test_a_sandbox_that_cannot_run_is_told_once_per_editor(crow_home, tmp_path):
    """Issue 22 item 5: without bubblewrap, an editor that takes notices is told once, with the fix."""
    from support.sandbox_home import without_bwrap

    async with ScriptedModel(default=Reply(text="ok")) as model:
        env = crow_env(crow_home, model.base_url) | {"PATH": without_bwrap(tmp_path)}
        async with raw_crow(env, capabilities=NOTICES) as crow:
            await crow.new_session(str(tmp_path))
            await crow.new_session(str(tmp_path))
            await crow.wait_for(lambda c: len(notices(c.updates)) >= 1)
            await crow.prompt(await crow.new_session(str(tmp_path)), "hello")  # everything before it has arrived
            told = [n for n in notices(crow.updates) if n[1] == "Commands cannot run in the sandbox"]
            assert problems(wire_messages(crow.received)) == []
        assert len(told) == 1 and told[0][0] == "warning"
        assert "bubblewrap" in (told[0][2] or "") and "ask before every command" in (told[0][2] or "")
        async with raw_crow(crow_env(crow_home, model.base_url), capabilities=NOTICES) as sandboxed:
            await sandboxed.prompt(await sandboxed.new_session(str(tmp_path)), "hello")
            assert [n for n in notices(sandboxed.updates) if "sandbox" in n[1]] == []
