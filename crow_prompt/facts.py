"""Facts about the machine and the repository for the system prompt: OS, shell, git state."""

from __future__ import annotations

import asyncio
import logging
import os
import platform
from pathlib import Path

from .context import git_root

log = logging.getLogger(__name__)

GIT_TIMEOUT = 3.0


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
    status = await _git_status(cwd)
    if status is None:  # no git binary, or it failed: the branch still comes from HEAD
        head = _head_branch(root)
        return f"branch {head}" if head else "a git repository"
    return _describe(status)


async def _git_status(cwd: Path) -> str | None:
    try:
        process = await asyncio.create_subprocess_exec(
            "git", "status", "--porcelain=v2", "--branch",
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,  # never inherit stdout: it is the ACP wire
            stderr=asyncio.subprocess.DEVNULL,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},  # do not fight the user's git for index.lock
        )
    except OSError as exc:
        log.info("git status unavailable: %s", exc)
        return None
    try:
        out, _ = await asyncio.wait_for(process.communicate(), GIT_TIMEOUT)
    except TimeoutError:
        process.kill()
        await process.wait()
        log.info("git status took over %s s in %s", GIT_TIMEOUT, cwd)
        return None
    return out.decode(errors="replace") if process.returncode == 0 else None


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
    git = root / ".git"
    try:
        if git.is_file():  # a worktree or submodule: ".git" names the real directory
            git = (root / git.read_text().split("gitdir:", 1)[1].strip()).resolve()
        head = (git / "HEAD").read_text().strip()
    except (OSError, IndexError):
        return None
    return head.removeprefix("ref: refs/heads/") if head.startswith("ref: ") else f"detached at {head[:7]}"
