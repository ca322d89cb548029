"""Images for vision models: prompt images and MCP tool images as OpenAI image parts (data URLs).

Every image is checked before it is stored: a known mime type, strict base64, bytes that match
the declared type, and a size cap, so a malformed or huge attachment gets a clear message instead
of a provider 400 or a bloated session store.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any

from ..errors import CrowError
from ..history import EntryMeta

if TYPE_CHECKING:
    from .session import Session

MAX_IMAGE_BYTES = 5 * 1024 * 1024
MAX_IMAGES = 8
"""Per prompt and per tool reply: the store keeps every image for replay."""
SIGNATURES = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}
OMITTED = "[image omitted: the current model does not accept images]"
BRIDGE = "I will look at the images the tools returned."
FLAG = "images"


class PromptRefused(CrowError):
    """The prompt cannot go to the model as it is; the message says why, and nothing is recorded."""


def check(mime: Any, data: Any) -> str | None:
    """Why this image is unusable, or None when it is fine."""
    if mime not in SIGNATURES:
        return f"the image type {str(mime)[:40]!r} is not supported (use PNG, JPEG, GIF or WebP)"
    if not isinstance(data, str) or len(data) > MAX_IMAGE_BYTES * 4 // 3 + 4:
        return f"the image is larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MB" if isinstance(data, str) else "no image data"
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return "the image data is not valid base64"
    if not raw.startswith(SIGNATURES[mime]) or (mime == "image/webp" and raw[8:12] != b"WEBP"):
        return f"the image data is not a {mime.split('/')[1].upper()} image"
    return None


def part(mime: str, data: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}


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
    return [{"type": "image", "mimeType": b.get("mimeType"), "data": ""} if b.get("type") == "image" else b for b in blocks]


def replayed_blocks(message: dict[str, Any], blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stored blocks with each image's data put back from the message's image parts, in order."""
    content = message.get("content")
    urls = iter([p["image_url"]["url"] for p in content if p.get("type") == "image_url"] if isinstance(content, list) else [])
    out = []
    for block in blocks:
        if block.get("type") == "image" and not block.get("data"):
            url = next(urls, "")
            block = {**block, "data": url.partition("base64,")[2]}
        out.append(block)
    return out


def for_model(session: Session) -> list[dict[str, Any]]:
    """The messages for the next call; image parts become a note when the current model is not a vision model."""
    messages = session.messages()
    if session.model.profile.vision or not session.data.get(FLAG):
        return messages  # the common case costs nothing: no copy of the history
    return [_without_images(message) for message in messages]


def _without_images(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if not isinstance(content, list):
        return message
    texts = [p["text"] if p.get("type") == "text" else OMITTED for p in content]
    return {**message, "content": "\n\n".join(texts)}


def record_tool_images(session: Session, images: list[tuple[str, list[tuple[str, str]]]]) -> None:
    """After a reply's tool results: images the tools returned, for a vision model to see.

    Tool messages carry text only (providers reject image parts there), and the strictest
    providers (Mistral) reject a user message right after a tool result, so an assistant
    sentence bridges the two.
    """
    if not session.model.profile.vision:
        return
    parts: list[dict[str, Any]] = []
    for tool, found in images:
        usable = [(mime, data) for mime, data in found if check(mime, data) is None][:MAX_IMAGES]
        if usable:
            parts.append({"type": "text", "text": f"Images returned by {tool}:"})
            parts += [part(mime, data) for mime, data in usable]
    if parts:
        session.data[FLAG] = True
        session.save()
        session.record({"role": "assistant", "content": BRIDGE}, EntryMeta("ack"))
        session.record({"role": "user", "content": parts}, EntryMeta("injected"))
