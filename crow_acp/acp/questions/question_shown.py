"""How an MCP server's question is shown to the user: whose it is, where its URL really goes, and how big.

A server's question reaches the user in the editor's own chrome, where it looks like crow's. So the
message names the asking server; a URL question names the page's real host, in ASCII (IDNA: a
lookalike `apple.com` spelt with a Cyrillic `a` shows as `xn--pple-43d.com`); a URL or message with bidi
controls (which reorder what is shown: `moc.elppa` as `apple.com`) or other control characters is
declined, as is a form past MAX_FIELDS fields or MAX_BYTES bytes. crow declines on the user's
behalf and the model is told why (elicitation.py).
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any
from urllib.parse import urlsplit

MAX_FIELDS = 32
MAX_BYTES = 32 * 1024
"""A form's schema and message together, as JSON; a server's question is a few lines, not a document."""
BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def unsafe_text(text: str) -> str | None:
    """Why `text` cannot be shown as it is (bidi or control characters), or None."""
    for char in text:
        if char in BIDI:
            return f"a bidirectional control character (U+{ord(char):04X})"
        if unicodedata.category(char) in ("Cc", "Cf") and char not in "\n\t":
            return f"a control character (U+{ord(char):04X})"
    return None


def real_host(url: str) -> tuple[str | None, str | None]:
    """(the URL's host as it is resolved, in ASCII; why it cannot be shown, when it cannot)."""
    if why := unsafe_text(url):
        return None, f"a URL with {why}"
    try:
        host = urlsplit(url).hostname
        ascii_host = host.encode("idna").decode("ascii") if host else None
    except (UnicodeError, ValueError):
        return None, "a URL whose host is not a valid domain name"
    if not ascii_host:
        return None, "a URL without a host"
    return ascii_host, None


def form_too_big(message: str, schema: Any) -> str | None:
    """Why a form is refused for its size, or None."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if isinstance(properties, dict) and len(properties) > MAX_FIELDS:
        return f"a form of {len(properties)} fields (crow shows at most {MAX_FIELDS})"
    size = len(json.dumps([message, schema], ensure_ascii=False, default=str).encode())
    if size > MAX_BYTES:
        return f"a form of {size} bytes (crow shows at most {MAX_BYTES})"
    return None


def shown_message(server: str, message: str, host: str | None = None) -> str:
    """The question as the user reads it: the server named, and for a URL the host it opens."""
    where = f" (opens {host})" if host else ""
    return f"The MCP server {server!r} asks{where}: {message}"
