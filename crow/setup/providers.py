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


PROVIDERS: dict[str, ProviderInfo] = {
    "openai": ProviderInfo("openai", "OpenAI", "https://api.openai.com/v1", "chat", True),
    "anthropic": ProviderInfo("anthropic", "Anthropic", "https://api.anthropic.com/v1", "anthropic", True),
    "openrouter": ProviderInfo("openrouter", "OpenRouter", "https://openrouter.ai/api/v1", "chat", True),
    "custom": ProviderInfo("custom", "Any OpenAI-compatible URL (llama.cpp, vLLM, Ollama...)", None, "chat", False),
}
