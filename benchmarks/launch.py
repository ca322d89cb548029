"""Issue 28's launch figure: spawn to the `initialize` answer, for `crow-agent acp` from a tool venv made
from the wheel (as `uvx crow-agent@VERSION acp` runs it, uv's own resolution left out) and for `crow acp`
from the dev venv (an editable install). Goal: the first within 1.1x the second.

    .venv/bin/python benchmarks/launch.py [--runs 15]

Runs alternate between the two, so the machine's load falls on both alike; the medians are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from support.wheel_venv import tool_venv  # noqa: E402  (tests/ is put on the path just above)

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}


def to_initialize(command: list[str], home: str) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CROW_", "VIRTUAL_ENV"))}
    env |= {"CROW_HOME": home, "OPENAI_API_KEY": "bench-key"}
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=home)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    elapsed = time.perf_counter() - start
    assert "result" in answer, answer
    proc.stdin.close()
    proc.wait(timeout=30)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory(prefix="crow-launch-") as scratch:
        tool_bin = tool_venv(Path(scratch))
        commands = {
            "uvx-style (wheel venv) crow-agent acp": [str(tool_bin / "crow-agent"), "acp"],
            "dev venv crow acp": [str(Path(sys.executable).parent / "crow"), "acp"],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for command in commands.values():  # one warm-up each: the first start compiles the pycs
            to_initialize(command, scratch)
        for _ in range(runs):
            for name, command in commands.items():
                times[name].append(to_initialize(command, scratch))
    medians = {name: statistics.median(values) * 1000 for name, values in times.items()}
    for name, median in medians.items():
        sys.stdout.write(f"{name:42} median {median:7.1f} ms over {runs} runs\n")
    wheel, dev = medians.values()
    sys.stdout.write(f"ratio {wheel / dev:.2f}x (goal: within 1.1x)\n")


if __name__ == "__main__":
    main()
