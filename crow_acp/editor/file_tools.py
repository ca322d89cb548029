"""read_file, write_file and edit_file: the model's file tools over one workspace (files.py reads
and writes; a write or an edit is planned again when it runs, and previewed as a diff before)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from acp import tool_diff_content

from ..api import ToolContext
from ..events import ToolResult
from ..tools import FunctionTool
from .common import Handler, guarded, int_arg
from .files import old_text, read_text, replaced, write_text
from .paths import ToolError, Workspace

PATH = {"type": "string", "description": "File path, relative to the working directory or absolute."}
READ_DOC = (
    "Read a text file (the editor's unsaved version when there is one). "
    "`line` (1-based) and `limit` (number of lines) read part of a large file."
)
READ_SCHEMA = {
    "type": "object",
    "properties": {
        "path": PATH,
        "line": {"type": "integer", "minimum": 1, "description": "First line to read (1-based)."},
        "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to read."},
    },
    "required": ["path"],
}
WRITE_DOC = "Create a file or replace its whole content. Prefer edit_file for changes to existing files."
WRITE_SCHEMA = {
    "type": "object",
    "properties": {"path": PATH, "content": {"type": "string", "description": "The complete new file content."}},
    "required": ["path", "content"],
}
EDIT_DOC = (
    "Replace an exact string in a file. old_string must match the file exactly (whitespace included) "
    "and occur once, unless replace_all is true. Read the file first."
)
EDIT_SCHEMA = {
    "type": "object",
    "properties": {
        "path": PATH,
        "old_string": {"type": "string", "description": "The exact text to replace."},
        "new_string": {"type": "string", "description": "The text to put in its place."},
        "replace_all": {"type": "boolean", "description": "Replace every occurrence.", "default": False},
    },
    "required": ["path", "old_string", "new_string"],
}


Plan = Callable[[Workspace, dict[str, Any], ToolContext], Awaitable[tuple[str, str | None, str, str]]]
"""A write or an edit worked out against the file as it is now: (real path, its old text or None
for a new file, the new text, the summary for the model)."""


def file_tools(ws: Workspace) -> list[FunctionTool]:
    def title(verb: str) -> Callable[[dict[str, Any]], str]:
        return lambda args: f"{verb} {ws.display(str(args.get('path') or '?'))}"

    def locations(args: dict[str, Any]) -> tuple[str, ...]:
        return (ws.lexical(str(args["path"])),) if args.get("path") else ()

    return [
        FunctionTool("read_file", READ_DOC, READ_SCHEMA, guarded(partial(read_file, ws)), read_only=True, kind="read",
                     title=title("Read"), locations=locations),
        FunctionTool("write_file", WRITE_DOC, WRITE_SCHEMA, applying(ws, planned_write), kind="edit",
                     title=title("Write"), locations=locations, previewer=previewing(ws, planned_write)),
        FunctionTool("edit_file", EDIT_DOC, EDIT_SCHEMA, applying(ws, planned_edit), kind="edit",
                     title=title("Edit"), locations=locations, previewer=previewing(ws, planned_edit)),
    ]  # fmt: skip


async def read_file(ws: Workspace, args: dict[str, Any], context: ToolContext) -> ToolResult:
    path = ws.resolve(str(args["path"]))
    line, limit = int_arg(args, "line", None), int_arg(args, "limit", None)
    real, part = await read_text(ws, path, context, line, limit)
    if not part.text:
        return ToolResult(f"(no lines from line {line})" if line else f"({ws.display(real)} is empty)")
    hint = f"\n[... more lines follow: pass line={part.next_line} to read on ...]" if part.next_line else ""
    return ToolResult(part.text + hint)


async def planned_write(ws: Workspace, args: dict[str, Any], context: ToolContext) -> tuple[str, str | None, str, str]:
    new = str(args["content"])
    path, old = await old_text(ws, ws.resolve(str(args["path"])), context)
    verb = "Created" if old is None else "Wrote"
    return path, old, new, f"{verb} {ws.display(path)} ({len(new.splitlines())} lines)."


async def planned_edit(ws: Workspace, args: dict[str, Any], context: ToolContext) -> tuple[str, str | None, str, str]:
    find, replace = str(args["old_string"]), str(args["new_string"])
    path, old = await old_text(ws, ws.resolve(str(args["path"])), context)
    new, count = replaced(ws.display(path), old, find, replace, bool(args.get("replace_all")))
    plural = "s" if count > 1 else ""
    return path, old, new, f"Edited {ws.display(path)} ({count} replacement{plural})."


def applying(ws: Workspace, plan: Plan) -> Handler[ToolResult]:
    """The tool's handler: the change is planned again at run time (the buffer may have moved on since
    the preview), written, and shown as a diff."""

    async def run(args: dict[str, Any], context: ToolContext) -> ToolResult:
        path, old, new, summary = await plan(ws, args, context)
        if context.write_targets is not None and path not in context.write_targets:
            raise ToolError(
                f"{ws.display(path)} is not the file the permission check saw (a symbolic link changed); "
                "nothing was written."
            )
        await write_text(ws, path, new, context)
        return ToolResult(summary, content=[tool_diff_content(path, new, old)])

    return guarded(run)


def previewing(ws: Workspace, plan: Plan) -> Handler[ToolResult]:
    """The tool's previewer: the diff the change would make, for the permission question."""

    async def preview(args: dict[str, Any], context: ToolContext) -> ToolResult:
        path, old, new, _ = await plan(ws, args, context)
        return ToolResult("preview", content=[tool_diff_content(path, new, old)])

    return guarded(preview)
