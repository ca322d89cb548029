"""Crow's model keys stay in crow: no child process inherits them and no text crow records carries them.

The keys are the variables OPENAI_API_KEY and every profile's `api_key_env`, and any `api_key`
written in config.toml. `protect(config)` registers them (AcpAgent does, once per process).
Commands (`run_command`, locally and in the editor's terminal) and stdio MCP servers get
`child_env()`: the environment without those variables, plus what a server's config passes
explicitly. `redact()` is the last line of defence for text that reaches the model, the store
or the logs (a prompt link to a file that happens to hold a key, say).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import Config

DEFAULT_NAMES = frozenset({"OPENAI_API_KEY"})
MIN_SECRET = 8
"""Shorter values ("none", "x") are placeholders for keyless local servers, not secrets: redacting
them would mangle ordinary text."""
MARK = "[redacted key]"

_names: set[str] = set(DEFAULT_NAMES)
_written: set[str] = set()


def protect(config: Config) -> None:
    """Register the key variables and written keys of every model profile in the config."""
    for profile in [*config.models.values(), config.profile()]:
        _names.add(profile.api_key_env)
        if profile.api_key:
            _written.add(profile.api_key)
    _install_log_filter()


def key_names() -> frozenset[str]:
    return frozenset(_names)


def key_values() -> frozenset[str]:
    """The key values now in force (the environment is read each time: tests and users change it)."""
    values = {os.environ.get(name) or "" for name in _names} | _written
    return frozenset(value for value in values if len(value) >= MIN_SECRET)


def child_env(base: Mapping[str, str] | None = None, explicit: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a child process: base (default: crow's) without the keys, then explicit."""
    names = key_names()
    env = {name: value for name, value in (os.environ if base is None else base).items() if name not in names}
    env.update(explicit or {})
    return env


def redact(text: str) -> str:
    """The text with every key value replaced by a marker."""
    for value in key_values():
        if value in text:
            text = text.replace(value, MARK)
    return text


def redact_json(value: Any) -> Any:
    """redact() over every string in a JSON-like value (lists, dicts), which is copied only if needed."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_json(item) for item in value]
    if isinstance(value, dict):
        return {key: redact_json(item) for key, item in value.items()}
    return value


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
        return record

    logging.setLogRecordFactory(redacting)
