"""Workspace context: AGENTS.md, CROW.md and CLAUDE.md from the git root down to the cwd, nearest last.

They are read as read_file reads (crow_acp/editor/workspace_files.py): a file in the session's roots
must stay inside them, and one in a directory above the cwd (up to the git root) inside that
directory; regular files only, at most MAX_FILE bytes each. A file that is refused is left out, and
the reason is returned for the caller to show.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from crow_acp.editor.workspace_files import Refused, read_confined

log = logging.getLogger(__name__)

CONTEXT_FILES = ("AGENTS.md", "CROW.md", "CLAUDE.md")
CONTEXT_CAP = 32_000
"""Characters of workspace context in the system prompt (Codex caps project docs at 32 KiB too)."""

MAX_FILE = 4 * CONTEXT_CAP + 4
"""Bytes read of one context file: enough to fill the whole cap with 4-byte characters."""

Fingerprint = tuple[tuple[str, int, int], ...]


@dataclass
class Context:
    text: str
    skipped: list[str] = field(default_factory=list)
    """One line per context file that was not read, saying why."""


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
    """The context file names that exist as anything (a symlink, a FIFO: reading tells), outermost first."""
    return [path for path in candidates(cwd, names) if os.path.lexists(path)]


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


def workspace_context(cwd: Path, names: tuple[str, ...] = CONTEXT_FILES, cap: int = CONTEXT_CAP,
                      roots: tuple[str, ...] = ()) -> str:  # fmt: skip
    return read_context(cwd, names, cap, roots).text


def read_context(cwd: Path, names: tuple[str, ...] = CONTEXT_FILES, cap: int = CONTEXT_CAP,
                 roots: tuple[str, ...] = ()) -> Context:  # fmt: skip
    """The context files as tagged sections, outermost first, within `cap` characters.

    `roots` are the session's roots (the cwd is always one). The nearest file is the most specific,
    so the budget goes to it first: an outer file that does not fit is cut, with a visible marker,
    and files beyond it are named but left out. A file linked twice (CLAUDE.md -> AGENTS.md) counts once.
    """
    found, texts, seen = Context(""), [], set()
    for path in context_files(cwd, names):
        try:
            read = read_confined(str(path), (str(cwd), *roots, str(path.parent)), MAX_FILE)
        except FileNotFoundError:
            continue
        except Refused as exc:
            log.warning("workspace context file skipped: %s", exc)
            found.skipped.append(f"{path}: {exc}")
            continue
        if read.real not in seen:
            seen.add(read.real)
            texts.append((path, read.text.strip()))
    budget, shown = cap, []
    for path, text in reversed(texts):
        shown.append((path, _fit(path, text, budget)))
        budget = max(0, budget - len(text))
    found.text = "\n\n".join(
        f'<workspace_file path="{path}">\n{text}\n</workspace_file>' for path, text in reversed(shown)
    )
    return found


def _fit(path: Path, text: str, budget: int) -> str:
    if len(text) <= budget:
        return text
    if budget == 0:
        return f"[omitted: {len(text)} characters over the workspace context cap; read {path} if you need it]"
    cut = len(text) - budget
    return f"{text[:budget]}\n[... truncated: {cut} of {len(text)} characters not shown; read {path} for the rest]"
