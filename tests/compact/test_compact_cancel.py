"""A cancel while compaction writes its summary answers `cancelled` over ACP, wherever compaction
runs (after a reply, or in /compact), and the history stays valid."""

from __future__ import annotations

import asyncio

import anyio
import pytest
from support.compact_brain import FILLER, Brain, activity, turn
from support.helpers import RecordingClient, assert_strict_pairing, crow_env, text, write_config
from support.hosted import hosted_crow

from crow_acp.testing import ScriptedModel

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "third",
    [[text("turn three [p=100] " + FILLER * 4)], turn("three", 420), [text("/compact")]],
    ids=["before_the_model_call", "after_a_reply", "slash_compact"],
)
async def test_a_cancel_during_compaction_answers_cancelled(crow_home, tmp_path, third):
    write_config(crow_home, "[compaction]\nthreshold = 300\nkeep_last = 2\n")
    brain = Brain()
    brain.summary_delay = 60
    client = RecordingClient()
    async with ScriptedModel(default=brain) as model:
        async with hosted_crow(client, crow_env(crow_home, model.base_url)) as (conn, _):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=turn("one", 100, filler=True))
            await conn.prompt(session_id=sid, prompt=turn("two", 200, filler=True))
            prompt = asyncio.create_task(conn.prompt(session_id=sid, prompt=third))
            await client.wait_for(lambda c: activity(c, "Compacting context"), timeout=30)
            with anyio.fail_after(30):  # the summary request reached the model: the summary is being written now
                while not brain.summaries:  # noqa: ASYNC110 (the scripted model signals nothing)
                    await anyio.sleep(0.02)
            await conn.cancel(session_id=sid)
            assert (await asyncio.wait_for(prompt, 20)).stop_reason == "cancelled"
            assert [u.status for u in activity(client, "Compacting context")] == ["in_progress", "failed"]
            assert len(brain.summaries) == 1
            brain.summary_delay = 0
            assert (await conn.prompt(session_id=sid, prompt=turn("four", 100))).stop_reason == "end_turn"
    assert_strict_pairing(brain.turns[-1]["messages"])
