"""Where the model key comes from, and the one answer to "can crow's own agent call its model?"
(session/new answers auth_required when it cannot; `crow check` names the source, never the key)."""

from __future__ import annotations

import os

from ..errors import ConfigError
from .credentials import credentials_path
from .settings import Config

OTHER_KEYS = ("ANTHROPIC_API_KEY",)
"""Keys in the environment that count as a credential whatever the profile names (other wires read them)."""


def key_source(config: Config) -> str | None:
    """Where the active profile's key comes from, in words; None when there is no usable one."""
    profile = config.profile()
    if os.environ.get(profile.api_key_env):
        return f"environment ({profile.api_key_env})"
    if profile.api_key:
        stored = config.stored
        if stored is not None and profile.api_key == stored.api_key:
            return f"credentials ({credentials_path(config.home)})"
        return f"config ({config.config_path})"
    if named := next((name for name in OTHER_KEYS if os.environ.get(name)), None):
        return f"environment ({named})"
    try:
        config.api_key()
    except ConfigError:
        return None
    return f"none needed ({profile.base_url} is not the OpenAI API)"


def has_credential(config: Config) -> bool:
    """A key in the environment, the config or the stored credentials, or a server that needs none."""
    return key_source(config) is not None


def auth_message(config: Config) -> str:
    """What session/new says when has_credential is False."""
    return (
        f"No model API key: run `crow setup` (the editor's Authenticate button runs it), or set "
        f"{config.profile().api_key_env} or ANTHROPIC_API_KEY in the environment, or OPENAI_BASE_URL to a "
        f"local server that needs no key."
    )
