"""Which wire a model profile speaks, and the client for it: the one place that decides.

    chat        OpenAI chat completions (OpenAI, vLLM, DeepSeek, llama.cpp, OpenRouter, ...)
    responses   OpenAI Responses, stateless, reasoning carried across calls encrypted
    anthropic   Anthropic Messages, with prompt caching and signed thinking

The first that says: the profile's `api`, then CROW_API, then `stored` (a value crow keeps for the
user, such as a credentials file), then inference from the endpoint and the model.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal, cast, get_args
from urllib.parse import urlsplit

from ..config import Config, ModelProfile
from ..errors import ConfigError
from .client import ModelClient, OpenAIModelClient

Api = Literal["chat", "responses", "anthropic"]
CHOICES: tuple[str, ...] = get_args(Api)
ANTHROPIC_HOST = "api.anthropic.com"


def checked_api(value: str, where: str) -> Api:
    """`value` as a wire name, or the one-line error naming the key and the choices."""
    if value not in CHOICES:
        raise ConfigError(f"{where}: {value!r} is not a model wire; choose one of {', '.join(CHOICES)}")
    return cast(Api, value)


def choose_api(profile: ModelProfile, env: Mapping[str, str] | None = None, stored: str | None = None) -> Api:
    """The wire `profile` speaks (see the module's doc for the order)."""
    env = os.environ if env is None else env
    if profile.api is not None:
        return profile.api
    if crow_api := env.get("CROW_API"):
        return checked_api(crow_api, "CROW_API")
    if stored:
        return checked_api(stored, "api")
    if profile.base_url and urlsplit(profile.base_url).hostname == ANTHROPIC_HOST:
        return "anthropic"
    anthropic_env = env.get("ANTHROPIC_API_KEY") or env.get("ANTHROPIC_BASE_URL")
    if profile.model.startswith("claude-") and anthropic_env and not env.get("OPENAI_BASE_URL"):
        return "anthropic"
    return "chat"


def make_client(config: Config) -> ModelClient:
    """The client for the config's active profile, on its wire; no SDK is imported here."""
    profile, stored = config.profile(), config.stored
    api = choose_api(profile, stored=stored.api if stored and profile.base_url == stored.base_url else None)
    if api == "anthropic":
        from .anthropic_wire import AnthropicModelClient

        return AnthropicModelClient(config)
    if api == "responses":
        from .responses_wire import ResponsesModelClient

        return ResponsesModelClient(config)
    return OpenAIModelClient(config)


def prewarm(model: ModelClient) -> None:
    """Import the wire's SDK and make its client now, so that the first prompt need not (most of a second).
    Run it off the loop once a session exists (see client.prewarm)."""
    from .anthropic_wire import AnthropicModelClient

    try:
        if isinstance(model, OpenAIModelClient):  # chat and responses
            model._openai()
        elif isinstance(model, AnthropicModelClient):
            model._anthropic()
    except ConfigError:  # no API key: the first prompt says so
        pass
