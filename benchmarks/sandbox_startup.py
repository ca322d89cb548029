"""What the sandbox costs each local command: wall time (median, p95) and CPU time of `bash -c true` started
directly, in bubblewrap as crow builds the line (crow_acp/editor/sandbox.py: the roots bound by descriptor,
the secret stores hidden, the limits), with the network on (no network namespace), and inside a pids
cgroup where crow makes one.

    .venv/bin/python benchmarks/sandbox_startup.py [--runs 50]

Wall time is what a user waits; on a shared machine it moves with the load, so CPU time (user + system of
the command and all its descendants, from getrusage) is printed beside it.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable

from crow_acp.api import Sandbox
from crow_acp.editor import pids_cgroup
from crow_acp.editor.sandbox import bwrap_argv, opened, unavailable

SHELL = shutil.which("bash") or "/bin/sh"
Start = Callable[[], tuple[list[str], list[int], Callable[[], None]]]
"""Builds one run: its argv, the descriptors it inherits, and what to clean up after it."""


def measure(start: Start, runs: int) -> tuple[float, float, float]:
    """(median wall ms, p95 wall ms, mean CPU ms) over `runs` runs."""
    walls: list[float] = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(runs):
        begun = time.perf_counter()
        argv, fds, done = start()
        try:
            if subprocess.run(argv, pass_fds=fds, stdin=subprocess.DEVNULL, check=False).returncode != 0:
                raise SystemExit(f"{argv[:3]}... failed")
        finally:
            done()
        walls.append((time.perf_counter() - begun) * 1000)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1000 / runs
    return statistics.median(walls), statistics.quantiles(walls, n=20)[-1], cpu


def direct() -> tuple[list[str], list[int], Callable[[], None]]:
    return [SHELL, "-c", "true"], [], lambda: None


def sandboxed(root: str, cgroup: bool = False, network: bool = False) -> Start:
    bwrap = shutil.which("bwrap") or "bwrap"
    sandbox = Sandbox(network=network)

    def start() -> tuple[list[str], list[int], Callable[[], None]]:
        binds = opened([root])
        fds = binds.__enter__()
        argv = bwrap_argv(bwrap, sandbox, SHELL, "true", root, fds, [])
        group = pids_cgroup.create(sandbox.max_processes) if cgroup else None

        def done() -> None:
            binds.__exit__(None, None, None)
            if group:
                pids_cgroup.remove(group)

        return (pids_cgroup.wrap(group, argv) if group else argv), [fd for fd, _ in fds], done

    return start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=50)
    runs = parser.parse_args().runs
    if why := unavailable():
        raise SystemExit(f"no sandbox here: {why}")
    root = tempfile.mkdtemp(prefix="crow-bench-", dir="/var/tmp")
    rows = [("bash -c true, directly", direct), ("in the sandbox", sandboxed(root))]
    rows.append(("in the sandbox, network on", sandboxed(root, network=True)))  # no network namespace to make
    if (probe := pids_cgroup.create(1)) is not None:
        pids_cgroup.remove(probe)
        rows.append(("in the sandbox + pids cgroup", sandboxed(root, cgroup=True)))
    base = None
    print(f"{runs} runs each            median     p95   CPU (mean)")
    for name, start in rows:
        median, p95, cpu = measure(start, runs)
        extra = "" if base is None else f"  (+{median - base:.1f} ms median per command)"
        base = median if base is None else base
        print(f"{name:<30} {median:6.1f} ms {p95:6.1f} ms {cpu:6.1f} ms{extra}")
    shutil.rmtree(root)


if __name__ == "__main__":
    main()
