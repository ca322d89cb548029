"""ACP prompt content blocks as one user message for the model."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from pydantic import BaseModel

MAX_LINKED_FILE = 200_000


def as_dicts(blocks: list[Any]) -> list[dict[str, Any]]:
    """Blocks arrive as pydantic models from the editor, or as dicts from Python callers."""
    return [b.model_dump(mode="json", by_alias=True, exclude_none=True) if isinstance(b, BaseModel) else b for b in blocks]


def user_text(blocks: list[dict[str, Any]]) -> str:
    """The user's typed text only (for titles and slash commands)."""
    return "\n".join(block["text"] for block in blocks if block.get("type") == "text").strip()


def split_command(text: str) -> tuple[str, str]:
    """`/name argument` as (name, argument); the name is "" when the text is no slash command."""
    parts = text.split(maxsplit=1) if text.startswith("/") else [""]
    return parts[0][1:], parts[1] if len(parts) > 1 else ""


def to_model_text(blocks: list[dict[str, Any]]) -> str:
    return "\n\n".join(part for part in map(_block_text, blocks) if part)


def _block_text(block: dict[str, Any]) -> str:
    match block.get("type"):
        case "text":
            return block["text"]
        case "resource":
            resource = block["resource"]
            if "text" in resource:
                return f'<context uri="{resource["uri"]}">\n{resource["text"]}\n</context>'
            return f"[binary resource {resource['uri']} {resource.get('mimeType', '')}]"
        case "resource_link":
            return _linked(block)
        case "image" | "audio":
            return f"[{block['type']} attachment ({block.get('mimeType', '')}) not supported by this agent]"
    return ""


def _linked(block: dict[str, Any]) -> str:
    """A resource link; a local text file it points at is read, since the model cannot follow links."""
    uri = block["uri"]
    header = f"[resource link: {block.get('name', uri)} {uri}]"
    parsed = urlparse(uri)
    path = Path(unquote(parsed.path)) if parsed.scheme == "file" else None
    if path is None or not path.is_file() or path.stat().st_size > MAX_LINKED_FILE:
        return header
    try:
        return f'<context uri="{uri}">\n{path.read_text()}\n</context>'
    except (UnicodeDecodeError, OSError):
        return header
