"""The providers `crow setup` offers: where each lives, which wire it speaks, whether it needs a key."""

from __future__ import annotations

from dataclasses import dataclass

from crow_acp.config.credentials import Api, Provider


@dataclass(frozen=True)
class ProviderInfo:
    id: Provider
    label: str
    base_url: str | None
    """None: the user gives it (any OpenAI-compatible server)."""
    api: Api
    needs_key: bool
    suggested: str | None = None
    """The default model when the provider lists it (its list is alphabetical, not by use)."""


PROVIDERS: dict[str, ProviderInfo] = {
    "openai": ProviderInfo("openai", "OpenAI", "https://api.openai.com/v1", "chat", True, "gpt-4.1-mini"),
    "anthropic": ProviderInfo(
        "anthropic", "Anthropic", "https://api.anthropic.com/v1", "anthropic", True, "claude-sonnet-4-5"
    ),
    "openrouter": ProviderInfo(
        "openrouter", "OpenRouter", "https://openrouter.ai/api/v1", "chat", True, "openai/gpt-4.1-mini"
    ),
    "custom": ProviderInfo("custom", "Any OpenAI-compatible URL (llama.cpp, vLLM, Ollama...)", None, "chat", False),
}


def default_model(provider: ProviderInfo, listed: list[str]) -> str | None:
    """The model to offer first: the suggested one when listed, else the only or first one listed."""
    if provider.suggested in listed:
        return provider.suggested
    return listed[0] if listed else None
