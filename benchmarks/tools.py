"""Issue 13 item 5 figures: what the editor tools cost on hostile input, and how fast a cancel stops one.

    .venv/bin/python benchmarks/tools.py [--runs 5]

crow is driven over stdio with the scripted model at 0 ms latency, without client fs/terminal (the
local, confined paths). Each figure is the median of --runs prompts of one tool call each.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import ClientCapabilities, Implementation

from crow_acp.testing import Reply, ScriptedModel, ToolCall

CROW = [sys.executable, "-m", "crow", "acp"]
TREE_FILES = 3000


class Client:
    def __init__(self) -> None:
        self.running = asyncio.Event()

    async def session_update(self, session_id, update, **_):
        if getattr(update, "status", None) == "in_progress":
            self.running.set()

    async def request_permission(self, session_id, tool_call, options, **_):
        raise AssertionError("only read-only tools here")


async def timed(work: Path, home: str, call: ToolCall, runs: int, cancel: bool = False) -> float:
    """Median ms of a prompt making `call` (or, with cancel, from session/cancel to the prompt's answer)."""
    times = []
    per_run = [Reply(tool_calls=[call])] if cancel else [Reply(tool_calls=[call]), Reply(text="done")]
    with ScriptedModel(per_run * runs) as model:
        env = {**os.environ, "OPENAI_API_KEY": "bench", "OPENAI_BASE_URL": model.base_url, "CROW_HOME": home,
               "CROW_LOG_LEVEL": "WARNING"}  # fmt: skip
        client = Client()
        async with spawn_agent_process(client, *CROW, env=env, cwd=str(work), transport_kwargs={"stderr": None}) as (
            conn,
            _,
        ):
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities(),
                                  client_info=Implementation(name="bench", version="0"))  # fmt: skip
            for _ in range(runs):
                sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
                client.running.clear()
                prompt = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("go")]))
                if cancel:
                    await client.running.wait()
                    await asyncio.sleep(0.2)  # the scan is well under way
                start = time.perf_counter()
                if cancel:
                    await conn.cancel(session_id=sid)
                stop = (await prompt).stop_reason
                times.append((time.perf_counter() - start) * 1000)
                assert stop == ("cancelled" if cancel else "end_turn"), stop
    return statistics.median(times)


def make_files(work: Path) -> None:
    work.mkdir()
    with open(work / "big.log", "wb") as handle:
        handle.write(b"first line\n")
        handle.truncate(1 << 30)
    with open(work / "endless.log", "wb") as handle:
        handle.truncate(1 << 40)
    (work / "evil.txt").write_text("a" * 100_000 + "\n")
    for index in range(TREE_FILES):  # a source tree: each file listed by ripgrep, read confined, matched by RE2
        folder = work / "tree" / f"d{index // 100:02}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = [f"line {n} of file {index}: some ordinary source text here" for n in range(60)]
        lines[30] += " needle" if index % 10 == 0 else ""
        (folder / f"f{index:04}.py").write_text("\n".join(lines) + "\n")


def bare_ripgrep(work: Path, runs: int) -> float:
    """ripgrep alone searching the tree (how search_files searched before it read files confined)."""
    from crow_acp.editor.search import ripgrep

    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [ripgrep(), "--no-config", "--line-number", "needle", "tree"], cwd=work, capture_output=True, check=True
        )
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


async def main(runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work, home = Path(tmp) / "work", str(Path(tmp) / "home")
        make_files(work)
        figures = {
            "read_file, first line of a 1 GiB file": await timed(
                work, home, ToolCall("read_file", {"path": "big.log", "limit": 1}), runs
            ),
            "read_file, a 1 GiB line (scanned, cut)": await timed(
                work, home, ToolCall("read_file", {"path": "big.log", "line": 2}), runs
            ),
            "search_files '(a*)*b', a 100 kB line + the tree": await timed(
                work, home, ToolCall("search_files", {"pattern": "(a*)*b"}), runs
            ),
            f"search_files 'needle' over {TREE_FILES} files (its 300 matches)": await timed(
                work, home, ToolCall("search_files", {"pattern": "needle", "path": "tree", "max_results": 500}), runs
            ),
            f"search_files 'nothing' over {TREE_FILES} files": await timed(
                work, home, ToolCall("search_files", {"pattern": "nothing", "path": "tree"}), runs
            ),
            f"  (bare ripgrep 'needle' over the same {TREE_FILES} files)": bare_ripgrep(work, runs),
            "session/cancel → answer, during a 1 TiB scan": await timed(
                work, home, ToolCall("read_file", {"path": "endless.log", "line": 10**12}), runs, cancel=True
            ),
        }
        for name, ms in figures.items():
            print(f"{name:48} {ms:8.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    asyncio.run(main(parser.parse_args().runs))
