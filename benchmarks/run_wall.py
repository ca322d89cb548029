"""Issue 19 figures: `crow run "hi"` wall time against `crow acp`'s launch → first answer, same run.

    .venv/bin/python benchmarks/run_wall.py [--runs 7]

Both run against the scripted model at 0 ms latency on 127.0.0.1, with a fresh CROW_HOME.
- `crow run "hi"`: from starting the command to its exit (what a script waits for), output to a pipe.
- `crow acp` launch → first answer: from starting the process to the answer of its first
  `session/prompt` (initialize, session/new, prompt "hi"), driven by an ACP client over stdio.

Before (two processes: `crow run` started `crow acp` as a child for every prompt; commit 68bf629),
on 2 shared cores, median of 9: crow run "hi" 0.99 s, crow acp launch → first answer 0.62 s (1.60x).
After (one process, the agent hosted over crow/run's in-memory wire), same machine, median of 9:
crow run "hi" 0.74 s, crow acp launch → first answer 0.69 s (1.08x; target ≤ 1.3x).
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

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import ClientCapabilities, Implementation

from crow_acp.testing import Reply, ScriptedModel

PY = sys.executable
TARGET = 1.3


class QuietClient:
    async def session_update(self, session_id, update, **_):
        pass

    async def request_permission(self, session_id, tool_call, options, **_):
        raise AssertionError("the benchmark's prompt calls no tool")


def environment(home: str, base_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "OPENAI_API_KEY": "bench",
        "OPENAI_BASE_URL": base_url,
        "CROW_HOME": home,
        "CROW_LOG_LEVEL": "WARNING",
    }


def crow_run(env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run([PY, "-m", "crow", "run", "hi"], env=env, capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    if done.returncode != 0 or "hello" not in done.stdout:
        raise SystemExit(f"crow run failed ({done.returncode}): {done.stdout!r} {done.stderr[-500:]!r}")
    return took


async def acp_first_answer(env: dict[str, str]) -> float:
    start = time.perf_counter()
    command = [PY, "-m", "crow", "acp"]
    async with spawn_agent_process(QuietClient(), *command, env=env, transport_kwargs={"stderr": None}) as (conn, _):
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="bench", version="0"),
        )
        sid = (await conn.new_session(cwd=os.getcwd(), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=[text_block("hi")])
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    with ScriptedModel(default=Reply(text="hello there")) as model, tempfile.TemporaryDirectory() as home:
        env = environment(home, model.base_url)
        crow_run(env)  # the first start writes bytecode caches and the session store
        run_times, acp_times = [], []
        for _ in range(runs):  # interleaved, so a busy moment on the machine costs both alike
            run_times.append(crow_run(env))
            acp_times.append(asyncio.run(acp_first_answer(env)))
    run, acp = statistics.median(run_times), statistics.median(acp_times)
    print(f"crow run 'hi' wall time (median of {runs})          {run:6.2f} s")
    print(f"crow acp launch -> first answer (median of {runs})  {acp:6.2f} s")
    print(f"ratio {run / acp:.2f}x   target <= {TARGET}x   {'ok' if run / acp <= TARGET else 'MISSED'}")


if __name__ == "__main__":
    main()
