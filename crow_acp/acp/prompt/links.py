"""Links and embedded resources in a prompt: read only inside the session's roots.

The model cannot follow a link, so crow reads a `resource_link` to a file for it, through the same
confined opener as the file tools: only a regular file inside the session's roots (the cwd and the
additional directories) of at most MAX_LINKED_FILE bytes. Anything else reaches the model as a
line saying the link was not read, and why. An embedded resource whose file URI lies outside the
roots, or whose text is too large, is left out the same way (the editor read it, but the roots
are the boundary of what this session may see). Links that name an MCP server's resources were
already read through that server (mcp_prompts.inline_resources). Key values are redacted from
whatever the prompt becomes.
"""

from __future__ import annotations

import os
import threading
from typing import Any
from urllib.parse import unquote, urlparse

from ...editor.common import off_loop
from ...editor.paths import ToolError, Workspace
from ...util.secrets import redact
from .blocks import MAX_LINKED_FILE, to_model_text


async def prompt_text(blocks: list[dict[str, Any]], ws: Workspace) -> str:
    """The prompt as the model's user message: links read (or refused, with the reason), keys redacted."""
    links: dict[str, str] = {}
    for block in blocks:
        uri = _uri(block)
        if uri is not None and uri not in links:
            verdict = await _verdict(block, uri, ws)
            if verdict is not None:
                links[uri] = verdict
    return redact(to_model_text(blocks, links))


def _uri(block: dict[str, Any]) -> str | None:
    if block.get("type") == "resource_link":
        return str(block.get("uri", ""))
    if block.get("type") == "resource" and isinstance(block.get("resource"), dict):
        return str(block["resource"].get("uri", ""))
    return None


async def _verdict(block: dict[str, Any], uri: str, ws: Workspace) -> str | None:
    """What the model gets for this block; None keeps an embedded resource's own text."""
    path = _file_path(uri)
    if block["type"] == "resource":
        text = block["resource"].get("text")
        if path is not None and (reason := _outside(ws, path)):
            return _not_read(uri, reason)
        if isinstance(text, str) and len(text) > MAX_LINKED_FILE:
            return _not_read(uri, f"its text is larger than {MAX_LINKED_FILE} characters")
        return None
    if path is None:
        return _not_read(uri, "crow reads only file links inside the workspace", block.get("name"))
    try:
        return _context(uri, await off_loop(_read_linked, ws, ws.resolve(path)))
    except ToolError as exc:
        return _not_read(uri, str(exc), block.get("name"))
    except OSError as exc:
        return _not_read(uri, exc.strerror or str(exc), block.get("name"))


def _file_path(uri: str) -> str | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    return unquote(parsed.path)


def _outside(ws: Workspace, path: str) -> str | None:
    try:
        ws.resolve(path)
    except ToolError as exc:
        return str(exc)
    return None


def _read_linked(ws: Workspace, path: str, stop: threading.Event) -> str:
    fd, _ = ws.confined.open_file(path)
    try:
        data = os.read(fd, MAX_LINKED_FILE + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_LINKED_FILE:
        raise ToolError(f"it is larger than {MAX_LINKED_FILE} bytes")
    if b"\0" in data[:8192]:
        raise ToolError("it is a binary file")
    return data.decode("utf-8", errors="replace")


def _context(uri: str, text: str) -> str:
    return f'<context uri="{uri}">\n{text}\n</context>'


def _not_read(uri: str, reason: str, name: str | None = None) -> str:
    label = f"{name} {uri}" if name and name != uri else uri
    return f"[resource link: {label} (not read: {reason})]"
