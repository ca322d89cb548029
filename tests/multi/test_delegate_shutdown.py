"""Helpers a connection's delegations started stop with that connection: `crow serve` outlives its
editors, so a foreign helper's process (or a crow helper's model client) must not outlive theirs."""

from __future__ import annotations

import os

import anyio
import pytest
from support.helpers import RecordingClient, crow_env, text
from support.raw_wire import alive, eventually
from support.serve_support import crow_serve, over_ws
from test_delegate import by_prompt, parent_turn
from test_delegate_foreign import configure, member_calls, to_reviewer

from crow_acp.testing import ScriptedModel

pytestmark = pytest.mark.anyio


async def test_a_closed_connection_stops_its_foreign_helper_and_the_server_goes_on(crow_home, tmp_path):
    log = tmp_path / "member.jsonl"
    configure(crow_home, log)
    async with ScriptedModel() as model:
        turns = {"go": parent_turn(to_reviewer("review add()", "r1")), "again": parent_turn(to_reviewer("x", "r2"))}
        model.default = by_prompt(model, turns)
        async with crow_serve(crow_env(crow_home, model.base_url)) as served:
            with anyio.fail_after(100):
                async with over_ws(RecordingClient(), served) as conn:
                    sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                    assert (await conn.prompt(session_id=sid, prompt=[text("go")])).stop_reason == "end_turn"
                (helper,) = {c["pid"] for c in member_calls(log)}
                await eventually(lambda: not alive(helper), 30)  # its agent shut down, and its helper with it
                assert served.proc.returncode is None
                async with over_ws(RecordingClient(), served) as conn:  # a new editor delegates afresh
                    sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                    assert (await conn.prompt(session_id=sid, prompt=[text("again")])).stop_reason == "end_turn"
            pids = {c["pid"] for c in member_calls(log)}
            assert len(pids) == 2 and helper in pids
    assert os.getpid() not in pids
