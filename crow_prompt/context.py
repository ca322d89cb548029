"""Workspace context: AGENTS.md, CROW.md and CLAUDE.md from the git root down to the cwd, nearest last."""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)

CONTEXT_FILES = ("AGENTS.md", "CROW.md", "CLAUDE.md")
CONTEXT_CAP = 32_000
"""Characters of workspace context in the system prompt (Codex caps project docs at 32 KiB too)."""

Fingerprint = tuple[tuple[str, int, int], ...]


def git_root(start: Path) -> Path | None:
    """The nearest directory at or above `start` holding `.git` (a directory, or a file in worktrees)."""
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def context_dirs(cwd: Path) -> list[Path]:
    """Outermost first: the git root down to the cwd; only the cwd outside a repository."""
    root = git_root(cwd)
    if root is None:
        return [cwd]
    dirs = [cwd, *cwd.parents]
    return dirs[: dirs.index(root) + 1][::-1]


def candidates(cwd: Path, names: tuple[str, ...] = CONTEXT_FILES) -> list[Path]:
    return [directory / name for directory in context_dirs(cwd) for name in names]


def context_files(cwd: Path, names: tuple[str, ...] = CONTEXT_FILES) -> list[Path]:
    """The context files that exist, outermost first; a file linked twice (CLAUDE.md -> AGENTS.md) counts once."""
    files, seen = [], set()
    for path in candidates(cwd, names):
        if path.is_file() and (real := path.resolve()) not in seen:
            seen.add(real)
            files.append(path)
    return files


def fingerprint(paths: list[Path]) -> Fingerprint:
    """What changes when one of `paths` is created, edited or removed."""
    stamps = []
    for path in paths:
        try:
            stat = path.stat()
        except OSError:
            continue
        stamps.append((str(path), stat.st_mtime_ns, stat.st_size))
    return tuple(stamps)


def workspace_context(cwd: Path, names: tuple[str, ...] = CONTEXT_FILES, cap: int = CONTEXT_CAP) -> str:
    """The context files as tagged sections, outermost first, within `cap` characters.

    The nearest file is the most specific, so the budget goes to it first: an outer file that
    does not fit is cut, with a visible marker, and files beyond it are named but left out.
    """
    texts = [(path, text) for path in context_files(cwd, names) if (text := _read(path)) is not None]
    budget, shown = cap, []
    for path, text in reversed(texts):
        shown.append((path, _fit(path, text.strip(), budget)))
        budget = max(0, budget - len(text.strip()))
    return "\n\n".join(f'<workspace_file path="{path}">\n{text}\n</workspace_file>' for path, text in reversed(shown))


def _fit(path: Path, text: str, budget: int) -> str:
    if len(text) <= budget:
        return text
    if budget == 0:
        return f"[omitted: {len(text)} characters over the workspace context cap; read {path} if you need it]"
    cut = len(text) - budget
    return f"{text[:budget]}\n[... truncated: {cut} of {len(text)} characters not shown; read {path} for the rest]"


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        log.warning("cannot read workspace context file %s: %s", path, exc)
        return None
