"""Facts about the machine and the repository for the system prompt: OS, shell, git state."""

from __future__ import annotations

import os
import platform
from pathlib import Path

from .context import git_root
from .git_status import git_dirs, porcelain_status, read_head


def os_name() -> str:
    system = platform.system()
    if system == "Darwin":
        return f"macOS {platform.mac_ver()[0]}".strip()
    return f"{system} {platform.release()}".strip() or "unknown"


def shell_name() -> str:
    shell = os.environ.get("SHELL") or os.environ.get("COMSPEC") or ""
    return Path(shell).name or "unknown"


async def git_summary(cwd: Path) -> str | None:
    """'branch main, clean', 'branch main, dirty (2 changed, 1 untracked)'; None outside a repository."""
    root = git_root(cwd)
    if root is None:
        return None
    status = await porcelain_status(root)
    if status is None:  # no git binary, or it failed: the branch still comes from HEAD
        head = _head_branch(root)
        return f"branch {head}" if head else "a git repository"
    return _describe(status)


def _describe(status: str) -> str:
    head, oid, changed, untracked = "", "", 0, 0
    for line in status.splitlines():
        if line.startswith("# branch.head "):
            head = line.split(" ", 2)[2]
        elif line.startswith("# branch.oid "):
            oid = line.split(" ", 2)[2][:7]
        elif line.startswith("?"):
            untracked += 1
        elif line and not line.startswith(("#", "!")):
            changed += 1
    where = f"detached HEAD at {oid}" if head == "(detached)" else f"branch {head}"
    if not changed and not untracked:
        return f"{where}, clean"
    counts = [f"{changed} changed"] * bool(changed) + [f"{untracked} untracked"] * bool(untracked)
    return f"{where}, dirty ({', '.join(counts)})"


def _head_branch(root: Path) -> str | None:
    dirs = git_dirs(root)
    head = (read_head(dirs[0]) or "").strip() if dirs else ""
    if not head:
        return None
    return head.removeprefix("ref: refs/heads/") if head.startswith("ref: ") else f"detached at {head[:7]}"
