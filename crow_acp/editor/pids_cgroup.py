"""A pids cgroup per sandboxed command, where the process-count limit would not hold otherwise.

RLIMIT_NPROC (`ulimit -u`) does not bind root: the kernel exempts uid 0 from it, user namespace or
not. So when crow runs as root, a command goes into a cgroup of its own whose `pids.max` is the
limit (the cgroup-v1 pids hierarchy, when it is mounted and writable); the command's wrapper writes
its own pid into it before it execs bwrap, so every process it starts is counted from the first.
Other users get the rlimit, which the sandbox's shell sets in any case.
"""

from __future__ import annotations

import itertools
import logging
import os
import time

log = logging.getLogger(__name__)

HIERARCHY = "/sys/fs/cgroup/pids"
_serial = itertools.count()
ENTER = 'echo $$ > "$0/cgroup.procs" && exec "$@"'
"""The wrapper's script (`sh -c ENTER CGROUP ARGV...`): join the cgroup, then become the command."""


def needed() -> bool:
    return os.geteuid() == 0


def create(max_pids: int) -> str | None:
    """A fresh cgroup limited to max_pids processes, or None where none can be made."""
    if not os.access(os.path.join(HIERARCHY, "cgroup.procs"), os.W_OK):
        return None
    path = os.path.join(HIERARCHY, f"crow-{os.getpid()}-{next(_serial)}")
    try:
        os.mkdir(path, 0o755)
        with open(os.path.join(path, "pids.max"), "w") as limit:
            limit.write(str(max_pids))
    except OSError as exc:
        log.warning("cannot make a pids cgroup for a command: %s", exc)
        remove(path)
        return None
    return path


def wrap(path: str, argv: list[str]) -> list[str]:
    return ["/bin/sh", "-c", ENTER, path, *argv]


def remove(path: str) -> None:
    """Remove the cgroup once its processes are gone (a killed process may take a moment to leave it)."""
    for _ in range(50):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)
    log.warning("the pids cgroup %s is still busy; left behind", path)
