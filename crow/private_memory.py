"""Crow's memory is its own: on Linux it makes itself non-dumpable at start-up.

Commands crow runs (run_command, MCP servers) run as the same user, and a process of the same user
may read another's /proc/<pid>/environ and /proc/<pid>/mem, where crow holds the model keys. A
non-dumpable process's /proc files belong to root and ptrace is refused, so those reads fail;
crow still reads its own /proc/self. Children get their own dumpable flag back when they exec.
"""

from __future__ import annotations

import logging
import sys

log = logging.getLogger(__name__)

PR_SET_DUMPABLE = 4


def make_non_dumpable() -> None:
    """prctl(PR_SET_DUMPABLE, 0) on Linux; elsewhere, or if it fails, a log line and nothing more."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            log.warning("crow could not make itself non-dumpable: errno %d", ctypes.get_errno())
    except (OSError, AttributeError) as exc:  # no libc with prctl (an unusual Linux)
        log.warning("crow could not make itself non-dumpable: %s", exc)
