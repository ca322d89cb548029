"""The prompt's blocks as text for the model: the pieces message.py, links.py and slash commands use."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

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
    """The blocks as one text; `links` holds, by URI, what replaces a link or resource (links.py)."""
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
