"""Configuration: command line, then environment, then $CROW_HOME/config.toml, then defaults."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from .errors import ConfigError

Policy = Literal["ask", "allow", "deny"]


class ModelProfile(BaseModel):
    """One model endpoint."""

    model: str = "gpt-4o-mini"
    """The model id sent to the endpoint."""
    base_url: str | None = None
    """An OpenAI-compatible base URL; None means the openai default."""
    api_key_env: str = "OPENAI_API_KEY"
    """The environment variable that holds the key."""
    api_key: str | None = None
    """A key written in the config itself (prefer api_key_env)."""
    context_window: int = 128_000
    """Tokens the model accepts; reported in usage_update and used by compaction."""
    max_tokens: int | None = None
    """Cap on tokens per reply; None lets the provider decide."""
    temperature: float | None = None
    reasoning_effort: str | None = None
    """The effort sent as reasoning_effort; with reasoning = true, the picker's starting level."""
    reasoning: bool = False
    """The model takes reasoning_effort: the editor offers a thinking level (low, medium, high)."""
    vision: bool = False
    """The model accepts images: prompt images and MCP tool images are sent as image parts."""
    input_price: float | None = None
    """Price per million prompt tokens; with output_price, usage updates carry the session's cost."""
    output_price: float | None = None
    """Price per million completion tokens."""
    currency: str = "USD"
    """ISO 4217 code of the prices."""
    extra_body: dict[str, Any] = Field(default_factory=dict)
    """Extra JSON fields for providers with their own knobs."""


class McpServerConfig(BaseModel):
    """An MCP server from config.toml: stdio (command) or remote (url)."""

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    transport: Literal["http", "sse"] = "http"
    headers: dict[str, str] = Field(default_factory=dict)
    enabled: bool = True


class PermissionConfig(BaseModel):
    default: Policy = "ask"
    """Policy for tools not marked read-only: ask, allow or deny."""
    tools: dict[str, Policy] = Field(default_factory=dict)
    """Per-tool overrides; keys are tool names or fnmatch patterns such as "time__*"."""


class Timeouts(BaseModel):
    mcp_connect: float = 15.0
    """Seconds one MCP server may take to start and list its tools."""
    mcp_call: float = 120.0
    """Seconds one tool call may take."""
    model: float = 600.0
    """Seconds one model request may take (also the read timeout of a stream)."""


class CompactionConfig(BaseModel):
    threshold: int | None = None
    """Prompt tokens that trigger compaction; None means 80% of the context window."""
    keep_last: int = 10
    """Recent messages kept verbatim (the cut moves to a user-turn boundary)."""


class PromptConfig(BaseModel):
    system_path: str | None = None
    """A Jinja2 template that replaces the default system prompt."""


class TitleConfig(BaseModel):
    enabled: bool = True
    """After the first turn, a short side call names the session (the truncated prompt until then)."""
    model: str | None = None
    """The [models] profile that writes titles; None uses the session's own model."""


class Config(BaseModel):
    home: Path = Path("~/.crow").expanduser()
    model: str = "default"
    """A profile name from [models], or a raw model id."""
    models: dict[str, ModelProfile] = Field(default_factory=dict)
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    permissions: PermissionConfig = Field(default_factory=PermissionConfig)
    timeouts: Timeouts = Field(default_factory=Timeouts)
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    prompt: PromptConfig = Field(default_factory=PromptConfig)
    titles: TitleConfig = Field(default_factory=TitleConfig)
    max_steps: int = 50
    """Model calls per prompt before the turn stops with max_turn_requests."""
    max_retries: int = 3
    """Retries with backoff on 429, 5xx and timeouts (never on other 4xx)."""

    def profile(self) -> ModelProfile:
        """The active model profile; OPENAI_BASE_URL overrides the profile's base_url."""
        if self.model in self.models:
            profile = self.models[self.model]
        else:
            profile = ModelProfile() if self.model == "default" else ModelProfile(model=self.model)
        if env_url := os.environ.get("OPENAI_BASE_URL"):
            profile = profile.model_copy(update={"base_url": env_url})
        return profile

    def api_key(self) -> str:
        """The API key, or a ConfigError that says exactly what to set."""
        profile = self.profile()
        key = os.environ.get(profile.api_key_env) or profile.api_key
        if key:
            return key
        if profile.base_url:
            return "none"  # local OpenAI-compatible servers (llama.cpp, vLLM, Ollama) often need no key
        raise ConfigError(
            f"No model API key: set {profile.api_key_env} in the environment "
            f"(in Zed: agent_servers.Crow.env), or set OPENAI_BASE_URL to a server that needs no key."
        )

    @property
    def db_path(self) -> Path:
        return self.home / "sessions.db"

    @property
    def log_dir(self) -> Path:
        return self.home / "logs"


def crow_home() -> Path:
    return Path(os.environ.get("CROW_HOME") or "~/.crow").expanduser()


def load_config(home: Path | None = None, **overrides: Any) -> Config:
    """Read config.toml under home and apply command-line overrides (None values are ignored)."""
    home = (home or crow_home()).expanduser()
    path = home / "config.toml"
    data: dict[str, Any] = {}
    if path.exists():
        try:
            data = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: {exc}") from exc
    if env_model := os.environ.get("CROW_MODEL"):
        data["model"] = env_model
    data.update({key: value for key, value in overrides.items() if value is not None})
    data["home"] = home
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
