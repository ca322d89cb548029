"""Time to first chunk of each prompt of a fresh `crow acp`, prompt by prompt, with model titles on and off.

    .venv/bin/python benchmarks/ttft_by_prompt.py [--runs 7] [--prompts 6]

Each run starts crow, opens a session and sends the prompts back to back, as the shared harness does
(200-token replies from the scripted model, in this process, at 0 ms latency on 127.0.0.1). The first
prompt waits for openai's import; the ones after it show what work left over from earlier turns costs,
such as the title crow asks the model for after the first turn. Runs with titles on and off alternate,
so both see the same machine. Wall-clock figures: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import ClientCapabilities, Implementation

from crow_acp.testing import Reply, ScriptedModel


class FirstChunk:
    """An ACP client that notes when the first agent_message_chunk of the current prompt arrives."""

    def __init__(self) -> None:
        self.at: float | None = None

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        if self.at is None and getattr(update, "session_update", "") == "agent_message_chunk":
            self.at = time.perf_counter()

    async def request_permission(self, **_: Any) -> Any:
        raise RuntimeError("no tool calls in this benchmark")


async def one_run(base_url: str, prompts: int, titles: bool) -> list[float]:
    home, cwd = tempfile.mkdtemp(), tempfile.mkdtemp()
    if not titles:
        (Path(home) / "config.toml").write_text("[titles]\nenabled = false\n")
    env = {**os.environ, "CROW_HOME": home, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-bench"}
    client, ttfts = FirstChunk(), []
    async with spawn_agent_process(client, sys.executable, "-m", "crow", "acp", env=env, cwd=cwd) as (conn, _):
        info = Implementation(name="bench", version="0")
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities(), client_info=info
        )
        sid = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id
        for _ in range(prompts):
            client.at, sent = None, time.perf_counter()
            await conn.prompt(session_id=sid, prompt=[text_block("hi")])
            ttfts.append(((client.at or time.perf_counter()) - sent) * 1e3)
    return ttfts


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--prompts", type=int, default=6)
    args = parser.parse_args()
    by_setting: dict[bool, list[list[float]]] = {True: [], False: []}
    async with ScriptedModel(default=Reply(text="w " * 200)) as model:
        model.titles = Reply(text="A benchmark session")  # answered, as a real endpoint does
        for _ in range(args.runs):
            for titles in (True, False):
                by_setting[titles].append(await one_run(model.base_url, args.prompts, titles))
    print(f"time to first chunk, median of {args.runs} runs (ms)")
    print("prompt      " + "".join(f"{n + 1:>8}" for n in range(args.prompts)))
    for titles, runs in by_setting.items():
        medians = [statistics.median(column) for column in zip(*runs, strict=True)]
        print(f"titles {'on ' if titles else 'off'}  " + "".join(f"{m:8.1f}" for m in medians))


if __name__ == "__main__":
    asyncio.run(main())
