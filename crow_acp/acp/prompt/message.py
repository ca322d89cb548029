"""THE way from the editor's prompt blocks to the user message the model gets: model_content.

MCP prompt commands are expanded and resource links to MCP resources read (mcp.py, beside
this module); then the blocks become one text, with links and embedded resources read only inside
the session's roots, and images become image parts for a vision model. Whatever cannot be sent
raises PromptRefused (crow_acp.errors) with a message for the user; nothing is recorded then.

Links. The model cannot follow a link, so crow reads a `resource_link` to a file for it, through the
same confined opener as the file tools: only a regular file inside the session's roots (the cwd and
the additional directories) of at most MAX_LINKED_FILE bytes. Anything else reaches the model as a
line saying the link was not read, and why. An embedded resource whose file URI lies outside the
roots, or whose text is too large, is left out the same way (the editor read it, but the roots are
the boundary of what this session may see). Key values are redacted from whatever the prompt becomes.

Images are checked before anything is recorded, stored once (updates/replay.py puts them back on
load), and hidden from a model that cannot see them (core/request.py's hide_images).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from pydantic import BaseModel

from ...core.images import FLAG, MAX_IMAGES, check, part
from ...editor.common import off_loop
from ...editor.paths import ToolError, Workspace
from ...errors import PromptRefused
from ...util.secrets import redact
from .mcp import expand, inline_resources

if TYPE_CHECKING:
    from ...core.session import Session


async def model_content(session: Session, blocks: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    expanded = await expand(session, blocks, user_text(blocks))
    expanded = await inline_resources(session, expanded)
    text_blocks = [block for block in expanded if block.get("type") != "image"]
    roots = functools.partial(Workspace.of, session.cwd, session.additional_directories)  # resolved if needed
    return user_content(session, await prompt_text(text_blocks, roots), expanded)  # file links: only inside the roots


# ---- The blocks as text ----

MAX_LINKED_FILE = 200_000
"""Bytes of a linked file (or characters of an embedded one) the model may get."""


def as_dicts(blocks: list[Any]) -> list[dict[str, Any]]:
    """Blocks arrive as pydantic models from the editor, or as dicts from Python callers."""
    return [
        b.model_dump(mode="json", by_alias=True, exclude_none=True) if isinstance(b, BaseModel) else b for b in blocks
    ]


def user_text(blocks: list[dict[str, Any]]) -> str:
    """The user's typed text only (for titles and slash commands)."""
    return "\n".join(block["text"] for block in blocks if block.get("type") == "text").strip()


def split_command(text: str) -> tuple[str, str]:
    """`/name argument` as (name, argument); the name is "" when the text is no slash command."""
    parts = text.split(maxsplit=1) if text.startswith("/") else [""]
    return parts[0][1:], parts[1] if len(parts) > 1 else ""


def to_model_text(blocks: list[dict[str, Any]], links: Mapping[str, str] | None = None) -> str:
    """The blocks as one text; `links` holds, by URI, what replaces a link or resource (prompt_text, below)."""
    return "\n\n".join(part for part in (_block_text(block, links or {}) for block in blocks) if part)


def _block_text(block: dict[str, Any], links: Mapping[str, str]) -> str:
    match block.get("type"):
        case "text":
            return block["text"]
        case "resource":
            resource = block["resource"]
            if resource["uri"] in links:
                return links[resource["uri"]]
            if "text" in resource:
                return f'<context uri="{resource["uri"]}">\n{resource["text"]}\n</context>'
            return f"[binary resource {resource['uri']} {resource.get('mimeType', '')}]"
        case "resource_link":
            return (
                links.get(block["uri"])
                or f"[resource link: {block.get('name', block['uri'])} {block['uri']} (not read)]"
            )
        case "image" | "audio":
            return f"[{block['type']} attachment ({block.get('mimeType', '')}) not supported by this agent]"
    return ""


# ---- Links and embedded resources ----


async def prompt_text(blocks: list[dict[str, Any]], roots: Callable[[], Workspace]) -> str:
    """The prompt as the model's user message: links read (or refused, with the reason), keys redacted.

    The roots are resolved only for a prompt with links or resources: most prompts are text."""
    links: dict[str, str] = {}
    ws: Workspace | None = None
    for block in blocks:
        uri = _uri(block)
        if uri is not None and uri not in links:
            ws = ws or roots()
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


# ---- Images ----


def user_content(session: Session, text: str, blocks: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """The user message's content: plain text, or text and image parts for a vision model."""
    pictures = [block for block in blocks if block.get("type") == "image"]
    if not pictures:
        return text
    profile = session.model.profile
    if not profile.vision:
        raise PromptRefused(
            f"The model {profile.model!r} does not accept images, so nothing was sent. Remove the image, pick a "
            "vision model, or set vision = true on its [models] profile in config.toml if it does accept them."
        )
    if len(pictures) > MAX_IMAGES:
        raise PromptRefused(f"At most {MAX_IMAGES} images fit in one prompt; nothing was sent.")
    for number, block in enumerate(pictures, 1):
        if problem := check(block.get("mimeType"), block.get("data")):
            raise PromptRefused(f"Image {number} cannot be sent: {problem}. Nothing was sent.")
    session.data[FLAG] = True
    session.save()
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    return parts + [part(block["mimeType"], block["data"]) for block in pictures]


def stored_blocks(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The prompt's blocks for replay, without a second copy of each image (the message holds it)."""
    return [
        {"type": "image", "mimeType": b.get("mimeType"), "data": ""} if b.get("type") == "image" else b for b in blocks
    ]
