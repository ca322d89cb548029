"""The prompt's images: checked before anything is recorded, stored once (updates/replay.py puts them
back on load), and hidden from a model that cannot see them (a request step).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...core.images import FLAG, MAX_IMAGES, check, part
from ...errors import CrowError

if TYPE_CHECKING:
    from ...core.request import ModelRequest
    from ...core.session import Session

OMITTED = "[image omitted: the current model does not accept images]"


class PromptRefused(CrowError):
    """The prompt cannot go to the model as it is; the message says why, and nothing is recorded."""


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


def hide_images(session: Session, request: ModelRequest) -> ModelRequest:
    """A request step: image parts become a note when the current model is not a vision model."""
    if session.model.profile.vision or not session.data.get(FLAG):
        return request  # the common case costs nothing: no copy of the history
    request.messages = [_without_images(message) for message in request.messages]
    return request


def _without_images(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if not isinstance(content, list):
        return message
    texts = [p["text"] if p.get("type") == "text" else OMITTED for p in content]
    return {**message, "content": "\n\n".join(texts)}
