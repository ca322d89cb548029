"""Crow's secrets stay in crow: no child process inherits them and no text crow records carries them.

The secrets are the model keys (OPENAI_API_KEY, every profile's `api_key_env`, any `api_key` written
in config.toml, the key `crow setup` stored in credentials.toml), the values of every variable named
like a secret (`*_TOKEN`, `*SECRET*`, `*_KEY`, `*PASSWORD*`: ANTHROPIC_API_KEY, GITHUB_TOKEN,
AWS_SECRET_ACCESS_KEY, CROW_SERVE_TOKEN...), the password of every URL in the environment
(CROW_DATABASE_URL's), and what `protect_value` adds (`crow serve`'s token, read from its file or
generated). `protect(config)` registers the keys (AcpAgent does, once per process).
Commands (`run_command`, locally and in the editor's terminal), stdio MCP servers and members get
`child_env()`: an allow list of crow's environment (util/environment.py), plus what a server's or a
member's config passes explicitly. `hide_url_password(text)` is how a message shows a URL.

No text crow records or sends carries a key value, whoever produced it (a tool, an MCP server, the
model, an exception): `dumps()` redacts at the three doors everything passes, the ACP wire
(crow_acp/acp/rpc/wire.py), the model requests (crow_acp/model/client.py) and the store (crow_acp/store/sql.py); the log
record factory redacts every log message and traceback. Text that is cut to a length (tool output,
titles, plan steps) is redacted before the cut, so no part of a key is left at the edge.
"""

from __future__ import annotations

import base64
import functools
import json
import logging
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .environment import configure, inherited, secret_named

if TYPE_CHECKING:
    from ..config import Config

DEFAULT_NAMES = frozenset({"OPENAI_API_KEY"})
MIN_SECRET = 8
"""Shorter values ("none", "x") are placeholders for keyless local servers, not secrets: redacting
them would mangle ordinary text."""
MARK = "[redacted key]"

_names: set[str] = set(DEFAULT_NAMES)
_written: set[str] = set()
_known: tuple[dict[Any, Any], int, frozenset[str]] | None = None
"""The environment key_values() last read, how many names and values were registered then, and its answer."""


def protect(config: Config) -> None:
    """Register the key variables and written keys of every model profile in the config (the stored key
    is the active profile's when it has none of its own); again after `crow setup` stored a new one."""
    for profile in [*config.models.values(), config.profile()]:
        _names.add(profile.api_key_env)
        if profile.api_key:
            _written.add(profile.api_key)
    configure(config.sandbox.inherit, config.sandbox.env_inherit)
    _install_log_filter()


def protect_value(value: str) -> None:
    """One more secret crow holds (the serve token it read from a file or made): redacted from then on."""
    _written.add(value)


_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/@\s:]*):(?P<password>[^/@\s]*)@")
"""scheme://user:password@ anywhere in a text (a URL's password has its reserved characters %-escaped)."""


def hide_url_password(text: str) -> str:
    """The text with the password of every URL in it (scheme://user:password@host) replaced by ***."""
    return _URL_PASSWORD.sub(lambda match: f"{match['head']}:***@", text)


def key_names() -> frozenset[str]:
    return frozenset(_names)


def key_values() -> frozenset[str]:
    """The secret values now in force. The environment may change (tests, `crow setup`), so it is compared
    with the one last read; dumps() asks for every line crow sends, and decoding the environment in
    Python each time cost tens of microseconds a line (a 200-chunk reply pays it 400 times)."""
    global _known
    environment = os.environ._data  # type: ignore[attr-defined]  # CPython's own dict: compared in C
    registered = len(_names) + len(_written)
    if _known is not None and _known[1] == registered and _known[0] == environment:
        return _known[2]
    values = _read_key_values()
    _known = (dict(environment), registered, values)
    return values


def _read_key_values() -> frozenset[str]:
    values = {os.environ.get(name) or "" for name in _names} | _written
    for name, value in os.environ.items():
        if secret_named(name):
            values.add(value)
        if "://" in value:
            values.update(found["password"] for found in _URL_PASSWORD.finditer(value))
    return frozenset(value for value in values if len(value) >= MIN_SECRET)


def child_env(base: Mapping[str, str] | None = None, explicit: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a child process: the allow list of base (default: crow's), then explicit."""
    env = inherited(os.environ if base is None else base, key_names())
    env.update(explicit or {})
    return env


def redact(text: str, values: frozenset[str] | None = None) -> str:
    """The text with every key value, and its base64 and hex forms, replaced by a marker."""
    values = key_values() if values is None else values
    for value in values:
        if value in text:
            text = text.replace(value, MARK)
    if values and (pattern := _encoded(values)).search(text):
        text = pattern.sub(MARK, text)
    return text


_BREAK = r"(?:\r?\n|\\r)?(?:\\n)?"
"""Between any two characters of an encoded key: a line break, raw or JSON-escaped (base64 wraps at 76)."""
_LIKE = {"+": "[+-]", "/": "[/_]"}
"""The URL-safe alphabet's stand-ins."""


@functools.lru_cache(maxsize=8)
def _encoded(values: frozenset[str]) -> re.Pattern[str]:
    """The base64 and hex forms of the keys, wherever they sit in an encoded stream.

    Hex is byte-aligned: one form (either case). A base64 stream groups bytes by three, so a key at
    offset o encodes differently for each o mod 3: the key without its first 0, 1 or 2 bytes, cut to
    whole groups, is what appears whatever surrounds it (at most 2 bytes on either edge stay shown)."""
    forms = []
    for value in sorted(values):
        raw = value.encode()
        forms.append(_spaced(raw.hex(), lambda c: f"[{c}{c.upper()}]" if c.isalpha() else c))
        for skip in range(3):
            whole = raw[skip:][: (len(raw) - skip) // 3 * 3]
            forms.append(_spaced(base64.b64encode(whole).decode(), lambda c: _LIKE.get(c, c)))
    return re.compile("|".join(forms))


def _spaced(text: str, char: Any) -> str:
    return _BREAK.join(char(c) for c in text)


def redact_json(value: Any, values: frozenset[str] | None = None) -> Any:
    """redact() over every string in a JSON-like value (lists, dicts, their keys too): a redacted copy."""
    values = key_values() if values is None else values
    if isinstance(value, str):
        return redact(value, values)
    if isinstance(value, list | tuple):
        return [redact_json(item, values) for item in value]
    if isinstance(value, dict):
        return {
            redact(key, values) if isinstance(key, str) else key: redact_json(item, values)
            for key, item in value.items()
        }
    return value


def dumps(value: Any, **options: Any) -> str:
    """json.dumps(value, **options) without any key value in it.

    The text is searched (fast, in C); only when a key is there is a redacted copy of the value
    serialized instead, so the result is valid JSON whatever the key is next to."""
    text = json.dumps(value, **options)
    values = key_values()
    ascii_only = options.get("ensure_ascii", True)
    if any(value in text or _escaped(value, ascii_only) in text for value in values) or (
        values and _encoded(values).search(text)
    ):
        text = json.dumps(redact_json(value, values), **options)
    return text


@functools.lru_cache(maxsize=64)
def _escaped(value: str, ascii_only: bool) -> str:
    """A key as it reads inside a JSON string (dumps runs for every line crow sends)."""
    return json.dumps(value, ensure_ascii=ascii_only)[1:-1]


_installed = False


def _install_log_filter() -> None:
    """Redact every log record as it is made: whoever configures the handlers, and whenever."""
    global _installed
    if _installed:
        return
    _installed = True
    make = logging.getLogRecordFactory()

    def redacting(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        if key_values():
            try:
                message = record.getMessage()
            except (TypeError, ValueError):  # a malformed format: logging reports it at emit time
                return record
            if (cleaned := redact(message)) != message:
                record.msg, record.args = cleaned, None
            if record.exc_info and not record.exc_text:  # a key in an exception's message or its locals' repr
                record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            if record.stack_info:
                record.stack_info = redact(record.stack_info)
        return record

    logging.setLogRecordFactory(redacting)
