"""Reading and writing a workspace file for the file tools (file_tools.py): through the editor's fs/*
methods when it offers them, else on disk, confined to the workspace.

Reads through the client see unsaved buffers; writes through it land in Zed's review panel. The
diff shown in the tool call carries the real old text, read the same way just before the write.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from acp import RequestError

from ..api import ToolContext
from .common import MAX_OUTPUT, Stopped, client_can, client_error, off_loop
from .confined import check_regular
from .paths import ToolError, Workspace

DEFAULT_LINES = 2000
"""Lines read_file returns when the model gives no limit."""
MAX_LINE_BYTES = 2000
"""A longer line is cut with a marker (minified files, logs): one line must not fill the answer."""
MAX_EDIT_BYTES = 5_000_000
"""Files edited or replaced are read whole (for the diff and the replacement): larger ones are refused."""
CHUNK = 1 << 20


@dataclass
class Excerpt:
    text: str
    next_line: int | None
    """Where a further read_file call would go on, when the answer stopped before the file's end."""


async def read_text(
    ws: Workspace, path: str, context: ToolContext, line: int | None, limit: int | None
) -> tuple[str, Excerpt]:
    """(the real path, the lines wanted): the editor's buffer when it offers fs reads, else the disk."""
    first, count = line or 1, limit or DEFAULT_LINES
    if client_can(context, "read_text_file"):
        real, _ = await off_loop(_existing_regular, ws, path)
        try:
            response = await context.client.read_text_file(
                session_id=context.session.session_id, path=real, line=line, limit=count
            )
        except RequestError as exc:
            raise client_error(f"read {ws.display(real)}", exc) from exc
        return real, excerpt([response.content.encode(errors="replace")], 1, count, first - 1, threading.Event())
    return await off_loop(_read_local, ws, path, first, count)


def _existing_regular(ws: Workspace, path: str, stop: threading.Event) -> tuple[str, os.stat_result | None]:
    """The real path, and its stat when it exists (then it must be a regular file)."""
    real, st = ws.confined.real_path(path)
    if st is not None:
        check_regular(real, st)
    return real, st


def _read_local(ws: Workspace, path: str, first: int, count: int, stop: threading.Event) -> tuple[str, Excerpt]:
    fd, real = ws.confined.open_file(path)
    try:
        return real, excerpt(iter(lambda: os.read(fd, CHUNK), b""), first, count, 0, stop)
    finally:
        os.close(fd)


def excerpt(chunks: Iterable[bytes], first: int, count: int, offset: int, stop: threading.Event) -> Excerpt:
    """Lines first..first+count-1 of a byte stream, holding no more than the answer in memory.

    Lines are cut at MAX_LINE_BYTES and the answer at MAX_OUTPUT characters; offset is added to the
    line numbers reported (when the stream already starts at a later line)."""
    chunks = iter(chunks)
    out: list[str] = []
    size, number, last = 0, 1, first + count
    kept, length = bytearray(), 0
    rest = b""
    for chunk in chunks:
        if stop.is_set():
            raise Stopped("The read was cancelled.")
        if number < first and number + (newlines := chunk.count(b"\n")) < first:
            number += newlines  # the whole chunk lies before the first line wanted
            continue
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0 and number < last and size < MAX_OUTPUT:
            if number >= first:
                kept, length = _keep(kept, length, chunk[start : end + 1])
                out.append(_decoded(kept, length))
                size += len(out[-1])
                kept, length = bytearray(), 0
            number, start = number + 1, end + 1
        rest = chunk[start:]
        if number >= last or size >= MAX_OUTPUT:
            break
        if number >= first:
            kept, length = _keep(kept, length, rest)
        rest = b""
    else:
        if length:
            out.append(_decoded(kept, length))
            number += 1
        return Excerpt("".join(out), None)
    more = bool(rest) or next(iter(chunks), b"") != b""
    return Excerpt("".join(out), number + offset if more else None)


def _keep(kept: bytearray, length: int, piece: bytes) -> tuple[bytearray, int]:
    kept += piece[: max(MAX_LINE_BYTES - len(kept), 0)]
    return kept, length + len(piece)


def _decoded(kept: bytearray, length: int) -> str:
    text = kept.decode("utf-8", errors="replace")
    if length > len(kept):
        text = text.rstrip("\n") + f" [... line cut: {length - len(kept)} more bytes ...]\n"
    return text


async def old_text(ws: Workspace, path: str, context: ToolContext) -> tuple[str, str | None]:
    """(the real path, its current text: the editor's buffer if it has one), or None for a new file.

    A file that does not exist on disk is new: the editor is not asked, since a failing
    fs/read_text_file shows up in its log as an error."""
    real, st = await off_loop(lambda stop: ws.confined.writable(path))
    if st is None:
        return real, None
    if st.st_size > MAX_EDIT_BYTES:
        raise ToolError(
            f"{ws.display(real)} is larger than {MAX_EDIT_BYTES} bytes; crow does not edit or replace files that large."
        )
    if client_can(context, "read_text_file"):
        try:
            response = await context.client.read_text_file(session_id=context.session.session_id, path=real)
        except RequestError as exc:
            raise client_error(f"read {ws.display(real)}", exc) from exc
        return real, response.content
    return real, await off_loop(_whole_local, ws, real)


def _whole_local(ws: Workspace, path: str, stop: threading.Event) -> str:
    fd, real = ws.confined.open_file(path)
    try:
        data = bytearray()
        while len(data) <= MAX_EDIT_BYTES and (chunk := os.read(fd, CHUNK)):
            if stop.is_set():
                raise Stopped("The read was cancelled.")
            data += chunk
    finally:
        os.close(fd)
    if len(data) > MAX_EDIT_BYTES:
        raise ToolError(
            f"{ws.display(real)} is larger than {MAX_EDIT_BYTES} bytes; crow does not edit or replace files that large."
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{ws.display(real)} is not UTF-8 text ({exc.reason} at byte {exc.start}); crow edits only UTF-8 files."
        ) from None


async def write_text(ws: Workspace, path: str, text: str, context: ToolContext) -> None:
    """Write a real path (from old_text): through the editor's review panel, or atomically on disk."""
    if client_can(context, "write_text_file"):
        real, _ = await off_loop(
            lambda stop: ws.confined.writable(path)
        )  # again, right before the editor writes: it may write in place
        if real != path:
            raise ToolError(
                f"{ws.display(path)} changed while it was being written (a symbolic link appeared); "
                "nothing was written."
            )
        try:
            await context.client.write_text_file(session_id=context.session.session_id, path=path, content=text)
        except RequestError as exc:
            raise client_error(f"write {ws.display(path)}", exc) from exc
        return
    await off_loop(lambda stop: ws.confined.write(path, text.encode("utf-8"), follow=False))


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
        raise ToolError(
            f"old_string was not found in {name}. Read the file and copy the text exactly, whitespace included."
        )
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_string occurs {count} times in {name}. Include more surrounding lines to make it unique, "
            "or set replace_all to true."
        )
    return text.replace(find, replace), count
