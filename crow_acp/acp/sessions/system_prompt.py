"""The `systemPrompt` of session/new, load, resume and fork, checked before any work (schema 1.30).

Crow applies text content blocks, in either mode (core/session.py says what each does). Anything
else fails closed with -32602 and a reason, never echoing the value back: an unknown mode, a content
block crow cannot put in a system prompt, a malformed object, or more than MAX_TEXT characters (a
system prompt is sent with every model request). Keys in it are redacted before it is stored.
"""

from __future__ import annotations

from typing import Any, NoReturn

from acp import RequestError

from ...core.session import ClientPrompt
from ...util.secrets import redact
from ...util.text import clean_text

MAX_TEXT = 100_000
"""Characters in all the text blocks together."""
MAX_BLOCKS = 100


def client_prompt(raw: Any) -> ClientPrompt | None:
    """The client's system prompt from a request's raw `systemPrompt`; None when it has none."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        _refuse("must be an object with `mode` and `content`")
    mode, content = raw.get("mode"), raw.get("content")
    if mode not in ("append", "override"):
        _refuse("`mode` must be append or override")
    if not isinstance(content, list) or not content or len(content) > MAX_BLOCKS:
        _refuse(f"`content` must be a list of 1 to {MAX_BLOCKS} content blocks")
    texts = []
    for number, block in enumerate(content, 1):
        if not isinstance(block, dict) or block.get("type") != "text" or not isinstance(block.get("text"), str):
            _refuse(f"content block {number}: crow applies text blocks only")
        texts.append(block["text"])
    text = "\n\n".join(texts)
    if len(text) > MAX_TEXT:
        _refuse(f"its text has {len(text)} characters, more than the {MAX_TEXT} crow accepts")
    if not text.strip():
        _refuse("its text is empty")
    return ClientPrompt(mode, redact(clean_text(text)))


def _refuse(reason: str) -> NoReturn:
    raise RequestError.invalid_params({"systemPrompt": reason})
