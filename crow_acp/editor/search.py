"""list_files and search_files: bounded, off the event loop, confined (ACP has no client method for them).

list_files walks directory fds from the confined opener: no symlink leads it out of the roots, and
a huge directory costs no more than the entries it shows. search_files runs ripgrep (the
`ripgrep` wheel's binary) only to list the files to search (.gitignore respected, in a subprocess
that the timeout or a cancel kills); grep.py reads each one through the confined opener and
matches it with RE2, a linear-time engine no pattern can hang.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import signal
import stat
import sysconfig
import threading
import time
from typing import Any

import anyio

from ..api import ToolContext
from ..events import ToolResult
from ..tools import FunctionTool
from .common import Stopped, guarded, int_arg, off_loop
from .confined import check_regular
from .grep import compile_pattern, grep_files
from .paths import ToolError, Workspace

SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache"})
MAX_ENTRIES = 500
MAX_MATCHES = 500
BATCH = 256
"""Files searched per trip to the worker thread."""
SEARCH_TIMEOUT = 60
"""Seconds one search may take; what it found by then is returned, with a marker."""
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def list_entries(ws: Workspace, top: str, recursive: bool, stop: threading.Event) -> str:
    try:
        fd, real = ws.confined.open_dir(top)
    except NotADirectoryError:
        raise ToolError(f"{ws.display(top)} is not a directory.") from None
    base = ws.display(real)
    lines: list[str] = []
    try:
        _list(fd, "" if base == "." else base + "/", recursive, lines, stop)
    finally:
        os.close(fd)
    if len(lines) > MAX_ENTRIES:
        lines[MAX_ENTRIES:] = [f"[... stopped after {MAX_ENTRIES} entries; list a subdirectory ...]"]
    return "\n".join(sorted(lines[:MAX_ENTRIES]) + lines[MAX_ENTRIES:]) or f"({base} is empty)"


def _list(fd: int, prefix: str, recursive: bool, lines: list[str], stop: threading.Event) -> None:
    """Entries below a directory fd; subdirectories are opened relative to it, never through a symlink."""
    if stop.is_set():
        raise Stopped("The listing was cancelled.")
    with os.scandir(fd) as scan:  # at most what can still be shown: a directory of millions costs no more
        entries = sorted(itertools.islice(scan, MAX_ENTRIES + 1 - len(lines)), key=lambda e: e.name)
    for entry in entries:
        if len(lines) > MAX_ENTRIES:
            return
        is_dir = entry.is_dir(follow_symlinks=False)
        lines.append(prefix + entry.name + ("/" if is_dir else ""))
        if recursive and is_dir and entry.name not in SKIP_DIRS:
            try:
                sub = os.open(entry.name, _DIR, dir_fd=fd)
            except OSError:
                continue  # gone, unreadable, or swapped for a symlink since it was listed
            try:
                _list(sub, prefix + entry.name + "/", recursive, lines, stop)
            finally:
                os.close(sub)


def ripgrep() -> str:
    """The `ripgrep` wheel's binary, installed beside this Python's scripts; else rg on PATH."""
    beside = os.path.join(sysconfig.get_path("scripts"), "rg")
    found = beside if os.access(beside, os.X_OK) else shutil.which("rg")
    if not found:
        raise ToolError("search_files needs ripgrep, which is not installed (pip install ripgrep).")
    return found


def rg_files_command(glob: str | None) -> list[str]:
    """ripgrep listing the files a search reads: never the reading itself, which opens by path."""
    command = [
        ripgrep(), "--no-config", "--files", "--null", "--hidden", "--no-require-git", "--sort=path",
        "--max-filesize=2M", *(f"--glob=!{name}" for name in sorted(SKIP_DIRS)),
    ]  # fmt: skip
    return command + (["--glob", glob] if glob else [])


async def search(ws: Workspace, top: str, pattern: str, ignore_case: bool, glob: str | None, limit: int) -> str:
    real, st = await off_loop(lambda stop: ws.confined.real_path(top))
    if st is None:
        raise ToolError(f"{ws.display(top)} does not exist.")
    if not stat.S_ISDIR(st.st_mode):
        check_regular(real, st)  # ripgrep would block forever on a FIFO named explicitly
    regex = await off_loop(lambda stop: compile_pattern(pattern, ignore_case))
    cwd, names = (real, []) if stat.S_ISDIR(st.st_mode) else (os.path.dirname(real), ["--", os.path.basename(real)])
    matches, note, error = await _search([*rg_files_command(glob), *names], cwd, ws, regex, limit)
    if not matches and error:
        raise ToolError(f"The search failed: {error.strip()[:500]}")
    return "\n".join(matches) + note if matches else "No matches."


async def _search(command: list[str], cwd: str, ws: Workspace, regex: Any, limit: int) -> tuple[list[str], str, str]:
    """(matches, a note on why it stopped early, rg's error text). Files are searched in batches
    while ripgrep goes on listing, so the first matches come without waiting for the whole list."""
    process = await asyncio.create_subprocess_exec(
        *command, cwd=cwd, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None  # both are pipes
    matches: list[str] = []
    note, pending = "", b""
    errors = asyncio.create_task(_read_capped(process.stderr, 4000))
    deadline = time.monotonic() + SEARCH_TIMEOUT
    try:
        with anyio.move_on_after(SEARCH_TIMEOUT) as timer:
            while len(matches) < limit and (chunk := await process.stdout.read(65536)):
                *names, pending = (pending + chunk).split(b"\0")
                for start in range(0, len(names), BATCH):
                    batch = names[start : start + BATCH]
                    matches += await off_loop(
                        grep_files, ws.confined, cwd, batch, regex, limit - len(matches), ws.display, deadline
                    )
                    if len(matches) >= limit:
                        note = f"\n[... stopped after {limit} matches; narrow the search ...]"
                        break
        if timer.cancelled_caught or time.monotonic() > deadline:
            note = f"\n[... the search was stopped after {SEARCH_TIMEOUT} s; narrow it ...]"
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        with anyio.CancelScope(shield=True):
            await process.wait()
    error = (await errors).decode(errors="replace") if process.returncode == 2 else ""
    errors.cancel()
    return matches, note, error


async def _read_capped(stream: asyncio.StreamReader, cap: int) -> bytes:
    kept = bytearray()
    while chunk := await stream.read(65536):
        kept += chunk[: max(cap - len(kept), 0)]
    return bytes(kept)


DIR = {"type": "string", "description": "Directory (or file), relative to the working directory. Default: '.'"}
LIST_DOC = (
    f"List a directory (one level, or recursively without .git and cache folders; at most {MAX_ENTRIES} entries)."
)
LIST_SCHEMA = {"type": "object", "properties": {"path": DIR, "recursive": {"type": "boolean", "default": False}}}
SEARCH_DOC = (
    "Search text files for a regular expression (RE2 syntax, one line at a time; invalid regexes match literally). "
    "Prints path:line: text for each match; skips .git, files ignored by .gitignore, binary and very large files."
)
SEARCH_SCHEMA = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "description": "Regular expression to look for in each line."},
        "path": DIR,
        "glob": {"type": "string", "description": "Only files whose name or path matches, e.g. '*.py'."},
        "ignore_case": {"type": "boolean", "default": False},
        "max_results": {"type": "integer", "default": 100, "maximum": MAX_MATCHES},
    },
    "required": ["pattern"],
}


def search_tools(ws: Workspace) -> list[FunctionTool]:
    @guarded
    async def list_files(args: dict[str, Any], context: ToolContext) -> ToolResult:
        top = ws.resolve(str(args.get("path") or "."))
        return ToolResult(await off_loop(list_entries, ws, top, bool(args.get("recursive"))))

    @guarded
    async def search_files(args: dict[str, Any], context: ToolContext) -> ToolResult:
        top = ws.resolve(str(args.get("path") or "."))
        pattern, glob = str(args["pattern"]), args.get("glob")
        limit = int_arg(args, "max_results", 100, high=MAX_MATCHES)
        return ToolResult(
            await search(ws, top, pattern, bool(args.get("ignore_case")), str(glob) if glob else None, limit)
        )

    return [
        FunctionTool("list_files", LIST_DOC, LIST_SCHEMA, list_files, read_only=True, kind="search",
                     title=lambda args: f"List {ws.display(str(args.get('path') or '.'))}",
                     locations=lambda args: (ws.lexical(str(args.get("path") or ".")),)),
        FunctionTool("search_files", SEARCH_DOC, SEARCH_SCHEMA, search_files, read_only=True, kind="search",
                     title=lambda args: f"Search '{args.get('pattern', '')}'"),
    ]  # fmt: skip
