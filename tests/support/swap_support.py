"""Races between crow's file tools and a process that keeps swapping what they use (symlinks, hard links)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from crow_acp.testing import Reply, ScriptedModel
from support.helpers import RecordingClient, crow_env, text
from support.hosted import hosted_crow


async def tool_answers_while_swapping(
    tmp_path: Path, work: Path, swapper: str, args: list[str], script: list[Reply]
) -> list[str]:
    """One prompt whose replies call tools in `work` while `swapper` (Python source, run with `args` and then a
    stop file) swaps things under them; the tool answers the model got. The swapper must have swapped."""
    stop = tmp_path / "stop"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", swapper, *args, str(stop), stdout=asyncio.subprocess.PIPE
    )
    try:
        with ScriptedModel(script, default=Reply(text="done")) as model:
            async with hosted_crow(RecordingClient(), crow_env(tmp_path / "home", model.base_url), cwd=str(work)) as (
                conn,
                _,
            ):
                session = await conn.new_session(cwd=str(work), mcp_servers=[])
                assert (await conn.prompt(session_id=session.session_id, prompt=[text("go")])).stop_reason == "end_turn"
    finally:
        stop.touch()
        swaps = int((await process.communicate())[0])
    assert swaps > 0
    return [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"]
