"""read_file, write_file and edit_file: through the editor's fs/* methods when it offers them.

Reads through the client see unsaved buffers; writes through it land in Zed's review panel. The
diff shown in the tool call carries the real old text, read the same way just before the write.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from acp import RequestError, tool_diff_content

from ..events import ToolResult
from ..tools import FunctionTool, ToolContext
from .common import MAX_OUTPUT, client_can, client_error, guarded, int_arg, truncate
from .paths import ToolError, Workspace

PATH = {"type": "string", "description": "File path, relative to the working directory or absolute."}


async def read_text(ws: Workspace, path: str, context: ToolContext, line: int | None = None, limit: int | None = None) -> str:
    if client_can(context, "read_text_file"):
        try:
            response = await context.client.read_text_file(
                session_id=context.session.session_id, path=path, line=line, limit=limit
            )
        except RequestError as exc:
            raise client_error(f"read {ws.display(path)}", exc) from exc
        return response.content
    text = await asyncio.to_thread(_read_local, path)
    if line is None and limit is None:
        return text
    start = (line or 1) - 1
    lines = text.splitlines(keepends=True)
    return "".join(lines[start : start + limit if limit else None])


def _read_local(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace", newline="") as handle:
        return handle.read()


async def old_text(ws: Workspace, path: str, context: ToolContext) -> str | None:
    """The current text (the editor's buffer if it has one), or None for a new file."""
    try:
        return await read_text(ws, path, context)
    except ToolError:
        if os.path.exists(path):
            raise
        return None
    except FileNotFoundError:
        return None


async def write_text(ws: Workspace, path: str, text: str, context: ToolContext) -> None:
    if client_can(context, "write_text_file"):
        try:
            await context.client.write_text_file(session_id=context.session.session_id, path=path, content=text)
        except RequestError as exc:
            raise client_error(f"write {ws.display(path)}", exc) from exc
        return
    await asyncio.to_thread(_write_local, path, text)


def _write_local(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)


def file_tools(ws: Workspace) -> list[FunctionTool]:
    def title(verb: str):
        return lambda args: f"{verb} {ws.display(str(args.get('path') or '?'))}"

    def locations(args: dict[str, Any]) -> tuple[str, ...]:
        return (ws.lexical(str(args["path"])),) if args.get("path") else ()

    @guarded
    async def read_file(args: dict[str, Any], context: ToolContext) -> ToolResult:
        path = ws.resolve(str(args["path"]))
        line, limit = int_arg(args, "line", None), int_arg(args, "limit", None)
        text = await read_text(ws, path, context, line, limit)
        hint = " Pass line and limit to read the rest." if len(text) > MAX_OUTPUT else ""
        if not text:
            return ToolResult(f"(no lines from line {line})" if line else f"({ws.display(path)} is empty)")
        return ToolResult(truncate(text) + hint)

    async def planned_write(args: dict[str, Any], context: ToolContext) -> tuple[str, str | None, str, str]:
        path, new = ws.resolve(str(args["path"])), str(args["content"])
        old = await old_text(ws, path, context)
        verb = "Created" if old is None else "Wrote"
        return path, old, new, f"{verb} {ws.display(path)} ({len(new.splitlines())} lines)."

    async def planned_edit(args: dict[str, Any], context: ToolContext) -> tuple[str, str | None, str, str]:
        path = ws.resolve(str(args["path"]))
        find, replace = str(args["old_string"]), str(args["new_string"])
        old = await old_text(ws, path, context)
        new, count = replaced(ws.display(path), old, find, replace, bool(args.get("replace_all")))
        plural = "s" if count > 1 else ""
        return path, old, new, f"Edited {ws.display(path)} ({count} replacement{plural})."

    def applying(plan):  # the change is planned again at run time: the buffer may have moved on
        @guarded
        async def run(args: dict[str, Any], context: ToolContext) -> ToolResult:
            path, old, new, summary = await plan(args, context)
            await write_text(ws, path, new, context)
            return ToolResult(summary, content=[tool_diff_content(path, new, old)])

        return run

    def previewing(plan):
        @guarded
        async def preview(args: dict[str, Any], context: ToolContext) -> ToolResult:
            path, old, new, _ = await plan(args, context)
            return ToolResult("preview", content=[tool_diff_content(path, new, old)])

        return preview

    write_file, edit_file = applying(planned_write), applying(planned_edit)

    return [
        FunctionTool(
            "read_file",
            "Read a text file (the editor's unsaved version when there is one). "
            "`line` (1-based) and `limit` (number of lines) read part of a large file.",
            {
                "type": "object",
                "properties": {
                    "path": PATH,
                    "line": {"type": "integer", "minimum": 1, "description": "First line to read (1-based)."},
                    "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to read."},
                },
                "required": ["path"],
            },
            read_file,
            read_only=True,
            kind="read",
            title=title("Read"),
            locations=locations,
        ),
        FunctionTool(
            "write_file",
            "Create a file or replace its whole content. Prefer edit_file for changes to existing files.",
            {
                "type": "object",
                "properties": {"path": PATH, "content": {"type": "string", "description": "The complete new file content."}},
                "required": ["path", "content"],
            },
            write_file,
            kind="edit",
            title=title("Write"),
            locations=locations,
            previewer=previewing(planned_write),
        ),
        FunctionTool(
            "edit_file",
            "Replace an exact string in a file. old_string must match the file exactly (whitespace included) "
            "and occur once, unless replace_all is true. Read the file first.",
            {
                "type": "object",
                "properties": {
                    "path": PATH,
                    "old_string": {"type": "string", "description": "The exact text to replace."},
                    "new_string": {"type": "string", "description": "The text to put in its place."},
                    "replace_all": {"type": "boolean", "description": "Replace every occurrence.", "default": False},
                },
                "required": ["path", "old_string", "new_string"],
            },
            edit_file,
            kind="edit",
            title=title("Edit"),
            locations=locations,
            previewer=previewing(planned_edit),
        ),
    ]


def replaced(name: str, text: str | None, find: str, replace: str, replace_all: bool) -> tuple[str, int]:
    """The text with `find` replaced, or a ToolError that tells the model how to fix its call."""
    if text is None:
        raise ToolError(f"{name} does not exist. Use write_file to create it.")
    if not find:
        raise ToolError("old_string is empty. Quote the exact text to replace.")
    if find == replace:
        raise ToolError("old_string and new_string are the same; nothing would change.")
    count = text.count(find)
    if count == 0:
        raise ToolError(f"old_string was not found in {name}. Read the file and copy the text exactly, whitespace included.")
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_string occurs {count} times in {name}. Include more surrounding lines to make it unique, "
            "or set replace_all to true."
        )
    return text.replace(find, replace), count
