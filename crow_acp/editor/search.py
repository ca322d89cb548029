"""list_files and search_files: local, bounded walks of the workspace (ACP has no client method for them)."""

from __future__ import annotations

import asyncio
import fnmatch
import os
import re
from typing import Any, Iterator

from ..events import ToolResult
from ..tools import FunctionTool, ToolContext
from .common import guarded, int_arg
from .paths import ToolError, Workspace

SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache"})
MAX_ENTRIES = 500
MAX_MATCHES = 500
MAX_FILE_BYTES = 2_000_000
MAX_LINE = 300


def walk(top: str, recursive: bool = True) -> Iterator[tuple[str, bool]]:
    """(path, is_dir) under top; a recursive walk skips VCS and cache directories."""
    for root, dirs, files in os.walk(top):
        if recursive:
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        yield from ((os.path.join(root, name), True) for name in sorted(dirs))
        yield from ((os.path.join(root, name), False) for name in sorted(files))
        if not recursive:
            return


def list_entries(ws: Workspace, top: str, recursive: bool) -> str:
    if not os.path.isdir(top):
        raise ToolError(f"{ws.display(top)} is not a directory.")
    lines: list[str] = []
    for path, is_dir in walk(top, recursive):
        if len(lines) == MAX_ENTRIES:
            lines.append(f"[... stopped after {MAX_ENTRIES} entries; list a subdirectory ...]")
            break
        lines.append(ws.display(path) + ("/" if is_dir else ""))
    return "\n".join(sorted(lines[:MAX_ENTRIES]) + lines[MAX_ENTRIES:]) or f"({ws.display(top)} is empty)"


def compile_pattern(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    """A regex; text that is not a valid regex is searched for literally."""
    flags = re.IGNORECASE if ignore_case else 0
    try:
        return re.compile(pattern, flags)
    except re.error:
        return re.compile(re.escape(pattern), flags)


def text_lines(path: str) -> list[str] | None:
    """The file's lines, or None for binary and very large files."""
    if os.path.getsize(path) > MAX_FILE_BYTES:
        return None
    with open(path, "rb") as handle:
        data = handle.read()
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace").splitlines()


def search(ws: Workspace, top: str, regex: re.Pattern[str], glob: str | None, limit: int) -> str:
    files = [(top, False)] if os.path.isfile(top) else walk(top)
    matches: list[str] = []
    for path, is_dir in files:
        if is_dir or (glob and not (fnmatch.fnmatch(os.path.basename(path), glob) or fnmatch.fnmatch(ws.display(path), glob))):
            continue
        if not ws.contains(path):
            continue  # a symlink to somewhere outside the workspace
        try:
            lines = text_lines(path)
        except OSError:
            continue
        for number, line in enumerate(lines or (), 1):
            if regex.search(line):
                matches.append(f"{ws.display(path)}:{number}: {line.strip()[:MAX_LINE]}")
                if len(matches) == limit:
                    return "\n".join(matches) + f"\n[... stopped after {limit} matches; narrow the search ...]"
    return "\n".join(matches) or "No matches."


def search_tools(ws: Workspace) -> list[FunctionTool]:
    @guarded
    async def list_files(args: dict[str, Any], context: ToolContext) -> ToolResult:
        top = ws.resolve(str(args.get("path") or "."))
        return ToolResult(await asyncio.to_thread(list_entries, ws, top, bool(args.get("recursive"))))

    @guarded
    async def search_files(args: dict[str, Any], context: ToolContext) -> ToolResult:
        top = ws.resolve(str(args.get("path") or "."))
        regex = compile_pattern(str(args["pattern"]), bool(args.get("ignore_case")))
        limit = int_arg(args, "max_results", 100, high=MAX_MATCHES)
        return ToolResult(await asyncio.to_thread(search, ws, top, regex, args.get("glob"), limit))

    path = {"type": "string", "description": "Directory (or file), relative to the working directory. Default: '.'"}
    return [
        FunctionTool(
            "list_files",
            f"List a directory (one level, or recursively without .git and cache folders; at most {MAX_ENTRIES} entries).",
            {
                "type": "object",
                "properties": {"path": path, "recursive": {"type": "boolean", "default": False}},
            },
            list_files,
            read_only=True,
            kind="search",
            title=lambda args: f"List {ws.display(str(args.get('path') or '.'))}",
            locations=lambda args: (ws.lexical(str(args.get("path") or ".")),),
        ),
        FunctionTool(
            "search_files",
            "Search text files for a regular expression (invalid regexes match literally). "
            "Prints path:line: text for each match; skips .git, binary and very large files.",
            {
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Regular expression to look for in each line."},
                    "path": path,
                    "glob": {"type": "string", "description": "Only files whose name or path matches, e.g. '*.py'."},
                    "ignore_case": {"type": "boolean", "default": False},
                    "max_results": {"type": "integer", "default": 100, "maximum": MAX_MATCHES},
                },
                "required": ["pattern"],
            },
            search_files,
            read_only=True,
            kind="search",
            title=lambda args: f"Search '{args.get('pattern', '')}'",
        ),
    ]
