""" "Always allow" remembers one exact command in one set of roots (policy/remembered.py): not a prefix,
not another command line, not in a session forked or loaded with other roots. Crow hosted in process."""

from __future__ import annotations

import anyio
import pytest
from support.answering import AnsweringClient, command, one_by_one
from support.helpers import crow_env, text
from support.hosted import hosted_crow

from crow_acp.testing import ScriptedModel

pytestmark = pytest.mark.anyio


async def test_always_allows_one_exact_command_in_these_roots_only(crow_home, tmp_path):
    first, other = tmp_path / "first", tmp_path / "other"
    (first / "x").mkdir(parents=True)
    other.mkdir()
    calls = [
        command("echo hi", "always"),
        command("echo hi", "remembered"),
        command("rm -rf x", "rm"),
        command("echo hi; touch X", "compound"),
        command("echo hi && touch X", "and"),
        command("echo hi\ntouch X", "newline"),
        command("echo hi $(touch X)", "substitution"),
    ]
    client = AnsweringClient(["allow_always", *["reject_once"] * 5, "reject_once", "reject_once"])
    script = [
        *one_by_one(calls),
        *one_by_one([command("echo hi", "forked")]),
        *one_by_one([command("echo hi", "loaded")]),
    ]
    async with ScriptedModel(script) as model:
        async with hosted_crow(client, crow_env(crow_home, model.base_url), cwd=str(first)) as (conn, _):
            with anyio.fail_after(60):
                sid = (await conn.new_session(cwd=str(first), mcp_servers=[])).session_id
                assert (await conn.prompt(session_id=sid, prompt=[text("run")])).stop_reason == "end_turn"
                fork = (await conn.fork_session(session_id=sid, cwd=str(other), mcp_servers=[])).session_id
                assert (await conn.prompt(session_id=fork, prompt=[text("fork")])).stop_reason == "end_turn"
                await conn.load_session(session_id=sid, cwd=str(other), mcp_servers=[])
                assert (await conn.prompt(session_id=sid, prompt=[text("load")])).stop_reason == "end_turn"

    asked = [tool_call.tool_call_id for tool_call, _ in client.permission_requests]
    assert asked == ["always", "rm", "compound", "and", "newline", "substitution", "forked", "loaded"]
    labels = [option.name for option in client.permission_requests[0][1]]
    assert labels == ["Allow", "Always allow `echo hi`", "Run outside the sandbox", "Reject"]
    assert (first / "x").is_dir() and not (first / "X").exists()
