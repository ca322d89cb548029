"""A pids cgroup per sandboxed command: a process-count limit for that command alone.

RLIMIT_NPROC (`ulimit -u`, which the sandbox's shell sets in any case) counts every process of the
user, not of the command, and does not bind root at all. So where crow can, a command goes into a
cgroup of its own whose `pids.max` is the limit; the command's wrapper writes its own pid into it
before it execs bwrap, so every process it starts is counted from the first.

- cgroup v2, for any user, where crow's own cgroup is a subtree it may manage (a delegated one: a
  systemd unit with Delegate=yes, a container's own namespace) and offers the pids controller. The
  no-internal-processes rule forbids enabling a controller for a cgroup's children while processes
  sit in it, so crow first moves itself (and what it started) into a leaf `crow` below it; only when
  nothing else is in its cgroup (nothing else of the user is moved). Command groups are then
  siblings of that leaf.
- else cgroup v1 as root, when the pids hierarchy is mounted and writable;
- else none: the rlimit alone.
"""

from __future__ import annotations

import itertools
import logging
import os
import time

log = logging.getLogger(__name__)

HIERARCHY = "/sys/fs/cgroup/pids"
V2_MOUNTS = ("/sys/fs/cgroup", "/sys/fs/cgroup/unified")
"""Where the unified hierarchy is mounted: alone, or beside v1 (a hybrid host)."""
_serial = itertools.count()
_v2_base: list[str | None] = []
"""The v2 directory command groups go into, once decided for this process ([None]: none)."""
ENTER = 'echo $$ > "$0/cgroup.procs" && exec "$@"'
"""The wrapper's script (`sh -c ENTER CGROUP ARGV...`): join the cgroup, then become the command."""


def create(max_pids: int) -> str | None:
    """A fresh cgroup limited to max_pids processes, or None where none can be made."""
    if not _v2_base:
        _v2_base.append(v2_base(V2_MOUNTS, _own_v2_path()))
    if base := _v2_base[0]:
        return _make(base, max_pids)
    if os.geteuid() == 0 and os.access(os.path.join(HIERARCHY, "cgroup.procs"), os.W_OK):
        return _make(HIERARCHY, max_pids)
    return None


def v2_base(mounts: tuple[str, ...], own: str | None) -> str | None:
    """The v2 cgroup whose children get pids limits (crow moved into its leaf `crow`), or None where crow
    may not: no unified hierarchy, no pids controller, not writable, or other processes in crow's cgroup."""
    if own is None:
        return None
    here = next((os.path.join(m, own.lstrip("/")) for m in mounts if _is_v2(os.path.join(m, own.lstrip("/")))), None)
    if here is None or "pids" not in _words(os.path.join(here, "cgroup.controllers")):
        return None
    control = os.path.join(here, "cgroup.subtree_control")
    if not (os.access(here, os.W_OK) and os.access(control, os.W_OK)):
        return None
    if "pids" in _words(control):
        return here  # the root cgroup, which may hold processes and enable controllers at once
    procs = [int(pid) for pid in _words(os.path.join(here, "cgroup.procs"))]
    if not all(_descends_from_crow(pid) for pid in procs):
        return None  # others share crow's cgroup: moving them is not crow's to do
    try:
        leaf = os.path.join(here, "crow")
        os.makedirs(leaf, exist_ok=True)
        for pid in procs:  # crow, and what it started already (MCP servers)
            _write(os.path.join(leaf, "cgroup.procs"), str(pid))
        _write(control, "+pids")
    except OSError as exc:
        log.info("no cgroup-v2 pids limits for commands (%s): the rlimit holds", exc)
        return None
    return here


def wrap(path: str, argv: list[str]) -> list[str]:
    return ["/bin/sh", "-c", ENTER, path, *argv]


def remove(path: str) -> None:
    """Remove the cgroup once its processes are gone (a killed process may take a moment to leave it)."""
    for _ in range(500):  # about a second; polled finely, as the command's result waits for it
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.002)
    log.warning("the pids cgroup %s is still busy; left behind", path)


def _make(parent: str, max_pids: int) -> str | None:
    path = os.path.join(parent, f"crow-{os.getpid()}-{next(_serial)}")
    try:
        os.mkdir(path, 0o755)
        _write(os.path.join(path, "pids.max"), str(max_pids))
    except OSError as exc:
        log.warning("cannot make a pids cgroup for a command: %s", exc)
        remove(path)
        return None
    return path


def _own_v2_path() -> str | None:
    """This process's cgroup in the unified hierarchy (the `0::` line), or None."""
    try:
        with open("/proc/self/cgroup") as lines:
            return next((line[3:].strip() for line in lines if line.startswith("0::")), None)
    except OSError:
        return None


def _descends_from_crow(pid: int) -> bool:
    crow = os.getpid()
    while pid > 1 and pid != crow:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                pid = int(stat.read().rsplit(")", 1)[1].split()[1])  # the parent: after the (command name)
        except (OSError, ValueError, IndexError):
            return False
    return pid == crow


def _is_v2(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "cgroup.controllers"))  # v1 directories have no such file


def _words(path: str) -> list[str]:
    try:
        with open(path) as file:
            return file.read().split()
    except OSError:
        return []


def _write(path: str, text: str) -> None:
    with open(path, "w") as file:
        file.write(text)
