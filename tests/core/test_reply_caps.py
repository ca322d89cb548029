"""Caps on one model reply: tool calls run at most 8 at once, more than 64 are refused, a reply
past 4 MB is cut, and arguments too deep to parse fail their call only. Driven over ACP with the
scripted model, as the attacker's model did: crow hosted in process (support/hosted.py), but over stdio
for the 50 MB reply, whose test measures crow's own process's peak memory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp.schema import McpServerStdio
from support import spawn
from support.helpers import RecordingClient, assert_strict_pairing, crow_env, run_crow, text, write_config
from support.hosted import hosted_crow

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio
CROWD_SERVER = Path(__file__).resolve().parents[1] / "mcp_servers" / "crowd_server.py"


def crowd_stdio() -> McpServerStdio:
    return McpServerStdio(name="crowd", command=spawn.python(), args=[str(CROWD_SERVER)], env=[])


def last_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results after the request's last assistant message, in order."""
    messages = request["messages"]
    start = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
    return messages[start + 1 :]


async def test_two_hundred_calls_run_eight_at_a_time_and_past_sixty_four_are_refused(crow_home, tmp_path):
    record = tmp_path / "crowd.txt"
    calls = [ToolCall("crowd__crowd", {"total": 64, "cap": 8, "record": str(record)}, id=f"c{n}") for n in range(200)]
    client = RecordingClient()
    async with ScriptedModel([Reply(tool_calls=calls), Reply(text="done")]) as model:
        async with hosted_crow(client, crow_env(crow_home, model.base_url)) as (conn, _):
            with anyio.fail_after(120):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[crowd_stdio()])).session_id
                stop = (await conn.prompt(session_id=sid, prompt=[text("crowd")])).stop_reason
    assert stop == "end_turn"
    # a waiting call stays pending until it starts: the first in_progress of a late call follows a finished one
    ids = {call.id for call in calls}
    kinds = [(u.tool_call_id, u.status) for u in client.of("tool_call_update") if u.tool_call_id in ids]
    first_done = next(i for i, (_, status) in enumerate(kinds) if status == "completed")
    assert kinds.index(("c8", "in_progress")) > first_done
    assert ("c64", "in_progress") not in kinds and client.tool_updates("c64")[-1].status == "failed"
    most, started = map(int, record.read_text().split())
    assert (most, started) == (8, 64)  # every slot filled, never a ninth; only the first 64 ran
    request = model.requests[-1]
    assert_strict_pairing(request["messages"])
    results = last_results(request)
    assert [r["tool_call_id"] for r in results] == [f"c{n}" for n in range(200)]  # the model's order
    assert all(r["content"].endswith("done") for r in results[:64])
    refused = {r["content"] for r in results[64:]}
    assert len(refused) == 1 and "not run" in refused.pop().lower() and "64" in results[64]["content"]


async def test_the_caps_are_configured_in_limits(crow_home, tmp_path):
    record = tmp_path / "crowd.txt"
    write_config(crow_home, "[limits]\nparallel_tool_calls = 3\ntool_calls_per_reply = 9\n")
    calls = [ToolCall("crowd__crowd", {"total": 9, "cap": 3, "record": str(record)}, id=f"c{n}") for n in range(12)]
    async with ScriptedModel([Reply(tool_calls=calls), Reply(text="done")]) as model:
        async with hosted_crow(RecordingClient(), crow_env(crow_home, model.base_url)) as (conn, _):
            with anyio.fail_after(60):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[crowd_stdio()])).session_id
                assert (await conn.prompt(session_id=sid, prompt=[text("crowd")])).stop_reason == "end_turn"
    assert record.read_text() == "3 9"
    results = last_results(model.requests[-1])
    assert [r["content"].startswith("Not run") for r in results] == [False] * 9 + [True] * 3


async def test_a_reply_of_endless_calls_is_cut_not_answered_one_by_one(crow_home, tmp_path):
    calls = [ToolCall("nothing", {}, id=f"n{n}") for n in range(64 * 16 + 1)]
    client = RecordingClient()
    async with ScriptedModel([Reply(text="Here goes.", tool_calls=calls), Reply(text="short")]) as model:
        async with hosted_crow(client, crow_env(crow_home, model.base_url)) as (conn, _):
            with anyio.fail_after(60):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                assert (await conn.prompt(session_id=sid, prompt=[text("go")])).stop_reason == "max_tokens"
                assert (await conn.prompt(session_id=sid, prompt=[text("again")])).stop_reason == "end_turn"
    kept = model.requests[-1]["messages"][-2]
    assert kept["role"] == "assistant" and "tool_calls" not in kept and "1,024 tool calls" in kept["content"]
    assert not client.of("tool_call") or all(u.title == "Connecting to MCP servers" for u in client.of("tool_call"))


def vm_hwm_mib(pid: int) -> float:
    """The process's peak resident memory (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


async def test_a_fifty_megabyte_reply_is_cut_at_four_and_the_model_is_told(crow_home, tmp_path):
    huge = "word " * 10_000_000  # 50 MB, in 10 KB chunks
    client = RecordingClient()
    script = [Reply(text=huge, chunks=5_000), Reply(text="short")]
    write_config(crow_home, "[compaction]\nthreshold = 100_000_000\n")  # the next request shows the reply as kept
    async with ScriptedModel(script) as model:
        async with run_crow(client, crow_env(crow_home, model.base_url)) as (conn, proc):
            with anyio.fail_after(120):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                stop = (await conn.prompt(session_id=sid, prompt=[text("talk")])).stop_reason
                assert (await conn.prompt(session_id=sid, prompt=[text("again")])).stop_reason == "end_turn"
                peak = vm_hwm_mib(proc.pid)
    assert stop == "max_tokens"
    kept = model.requests[-1]["messages"][-2]
    assert kept["role"] == "assistant" and kept["content"].startswith("word word")
    assert 4_000_000 <= len(kept["content"]) <= 4_000_000 + 300
    assert "cut" in kept["content"][-300:] and "4,000,000 characters" in kept["content"][-300:]  # the model is told
    assert "cut" in client.text()[-300:]  # and so is the user
    assert peak < 400, f"crow's peak RSS was {peak:.0f} MiB"


async def test_arguments_too_deep_to_parse_fail_that_call_only(crow_home, tmp_path):
    deep = "[" * 200_000 + "]" * 200_000
    calls = [ToolCall("nothing", deep, id="deep"), ToolCall("nothing", '{"a": ' + deep + "}", id="deeper")]
    client = RecordingClient()
    async with ScriptedModel([Reply(tool_calls=calls), Reply(text="recovered")]) as model:
        async with hosted_crow(client, crow_env(crow_home, model.base_url)) as (conn, _):
            with anyio.fail_after(60):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                stop = (await conn.prompt(session_id=sid, prompt=[text("deep")])).stop_reason
    assert stop == "end_turn" and client.text().endswith("recovered")
    request = model.requests[-1]
    assert_strict_pairing(request["messages"])
    calls_sent = request["messages"][-3]["tool_calls"]
    assert [json.loads(c["function"]["arguments"]) for c in calls_sent] == [{}, {}]
    results = last_results(request)
    assert [r["tool_call_id"] for r in results] == ["deep", "deeper"]
    assert all(r["content"].startswith("Invalid tool arguments") for r in results)
    assert [client.tool_updates(i)[-1].status for i in ("deep", "deeper")] == ["failed", "failed"]
