"""Images in the history, as OpenAI image parts (data URLs): how one is checked, and the images
tools return, recorded for a vision model to see (the prompt's own images: acp/prompt/message.py).

Every image is checked before it is stored: a known mime type, strict base64, bytes that match
the declared type, and a size cap, so a malformed or huge attachment gets a clear message instead
of a provider 400 or a bloated session store.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any

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
BRIDGE = "I will look at the images the tools returned."
FLAG = "images"


def check(mime: Any, data: Any) -> str | None:
    """Why this image is unusable, or None when it is fine."""
    if mime not in SIGNATURES:
        return f"the image type {str(mime)[:40]!r} is not supported (use PNG, JPEG, GIF or WebP)"
    if not isinstance(data, str) or len(data) > MAX_IMAGE_BYTES * 4 // 3 + 4:
        return (
            f"the image is larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MB"
            if isinstance(data, str)
            else "no image data"
        )
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return "the image data is not valid base64"
    if not raw.startswith(SIGNATURES[mime]) or (mime == "image/webp" and raw[8:12] != b"WEBP"):
        return f"the image data is not a {mime.split('/')[1].upper()} image"
    return None


def part(mime: str, data: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}


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
