"""What the command guard costs each local command: CPU time (user + system, from getrusage) of
`bash -c true` started directly and below crow_acp/editor/command_guard.py, as crow starts it.

    .venv/bin/python benchmarks/command_guard.py [--runs 30]

CPU time, not wall time: the machine is shared, and CPU time does not depend on its load.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys

from crow_acp.editor.processes import GUARD


def cpu_ms(command: list[str], runs: int) -> float:
    """Mean CPU milliseconds of the command and all its descendants."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(runs):
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)  # stdin: crow's pipe
        if process.wait() != 0:
            raise SystemExit(f"{command} failed")
        assert process.stdin is not None
        process.stdin.close()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1000 / runs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    runs = parser.parse_args().runs
    shell = ["/bin/bash", "-c", "true"]
    direct = cpu_ms(shell, runs)
    guarded = cpu_ms([sys.executable, "-I", "-S", GUARD, str(os.getpid()), *shell], runs)
    print(f"bash -c true, directly:      {direct:6.1f} ms CPU")
    print(f"bash -c true, below a guard: {guarded:6.1f} ms CPU (+{guarded - direct:.1f} ms per command)")


if __name__ == "__main__":
    main()
