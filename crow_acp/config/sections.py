"""The base of every table (Section), and the tables that describe what crow talks to: model profiles,
MCP servers and other ACP agents ([models.NAME], [mcp_servers.NAME], [agents.NAME])."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Policy = Literal["ask", "allow", "deny"]
RUN_ONLY = ("run_allow", "run_deny")
"""[permissions] fields the command line sets for one run; config.toml may not hold them."""
OPENAI_HOST = "api.openai.com"  # always wants a key: without one, fail at once rather than after its retries


class Section(BaseModel):
    """A table of config.toml: unknown keys are errors and nothing is coerced ("no" is not a boolean)."""

    model_config = ConfigDict(extra="forbid", strict=True)


LOCAL_HOSTS = ("localhost", "127.", "0.0.0.0", "[::1]")


def _http_url(value: str | None) -> str | None:
    if value is not None and not value.startswith(("http://", "https://")):
        raise ValueError(url_problem(value))
    return value


def url_problem(value: str) -> str:
    """Why a URL without http:// or https:// is refused, with the likely fix (a local server speaks plain http)."""
    if "://" in value:
        return f"must start with http:// or https://, got {value!r}"
    scheme = "http://" if value.startswith(LOCAL_HOSTS) else "https://"
    return f"must start with http:// or https://, got {value!r}; did you mean {scheme + value!r}?"


API_CHOICES = ("chat", "responses", "anthropic")
"""The model wires (crow_acp/model/wires.py chooses one)."""


class ModelProfile(Section):
    """One model endpoint."""

    model: str = Field("gpt-4o-mini", min_length=1)
    """The model id sent to the endpoint."""
    base_url: str | None = None
    """An OpenAI-compatible base URL; None means OPENAI_BASE_URL, else the OpenAI API."""
    api_key_env: str = Field("OPENAI_API_KEY", min_length=1)
    """The environment variable that holds the key."""
    api_key: str | None = None
    """A key written in the config itself (prefer api_key_env)."""
    context_window: int = Field(128_000, gt=0)
    """Tokens the model accepts; reported in usage_update and used by compaction."""
    max_tokens: int | None = Field(None, gt=0)
    """Cap on tokens per reply; None lets the provider decide."""
    temperature: float | None = Field(None, ge=0, le=2)
    """Sampling temperature; None lets the provider decide."""
    reasoning_effort: str | None = None
    """The effort sent as reasoning_effort; with reasoning = true, the picker's starting level."""
    reasoning: bool = False
    """The model takes reasoning_effort: the editor offers a thinking level (low, medium, high)."""
    vision: bool = False
    """The model accepts images: prompt images and MCP tool images are sent as image parts."""
    input_price: float | None = Field(None, ge=0)
    """Price per million prompt tokens; with output_price, usage updates carry the session's cost."""
    output_price: float | None = Field(None, ge=0)
    """Price per million completion tokens."""
    cache_read_price: float | None = Field(None, ge=0)
    """Price per million prompt tokens read from the provider's cache; None: input_price."""
    cache_write_price: float | None = Field(None, ge=0)
    """Price per million prompt tokens written to the cache (Anthropic); None: input_price."""
    currency: str = "USD"
    """ISO 4217 code of the prices."""
    api: Literal["chat", "responses", "anthropic"] | None = None
    """The wire: chat completions, OpenAI Responses or Anthropic Messages; None: CROW_API, else inferred."""
    cache_ttl: Literal["5m", "1h"] = "5m"
    """anthropic: how long the prompt cache keeps each breakpoint's prefix."""
    thinking_budget: int | None = Field(None, ge=1024)
    """anthropic: the thinking budget in tokens at the high level (lower levels get a share); None: 16000."""
    extra_body: dict[str, Any] = Field(default_factory=dict)
    """Extra JSON fields for providers with their own knobs."""

    @field_validator("base_url")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        return _http_url(value)


class McpServerConfig(Section):
    """An MCP server from config.toml: stdio (command) or remote (url), never both."""

    command: str | None = Field(None, min_length=1)
    """The program of a stdio server (a name on PATH, next to crow's Python, or a path)."""
    args: list[str] = Field(default_factory=list)
    """Arguments of a stdio server."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables passed to a stdio server."""
    url: str | None = None
    """The address of a remote server."""
    transport: Literal["http", "sse"] = "http"
    """A remote server's transport: streamable HTTP or SSE."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers sent to a remote server."""
    enabled: bool = True
    """False turns the server off without deleting it."""
    sandbox: bool = False
    """Run this stdio server in bubblewrap: read-only but `writable`, crow's home and the secret stores hidden."""
    network: bool = False
    """A sandboxed server reaches the network; false leaves it only a loopback of its own."""
    writable: list[str] = Field(default_factory=list)
    """Paths a sandboxed server may write besides its private /tmp (~ expanded)."""

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        return _http_url(value)

    @model_validator(mode="after")
    def _one_kind(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("needs exactly one of `command` (a stdio server) or `url` (a remote server)")
        if self.url is not None and (self.args or self.env):
            raise ValueError("`args` and `env` are for stdio servers (`command`), not for a `url`")
        if self.command is not None and self.headers:
            raise ValueError("`headers` are for remote servers (`url`), not for a `command`")
        if self.url is not None and self.sandbox:
            raise ValueError("`sandbox` is for stdio servers (`command`): a remote server runs elsewhere")
        if not self.sandbox and (self.network or self.writable):
            raise ValueError("`network` and `writable` take effect only with `sandbox = true`")
        return self


class AgentConfig(Section):
    """Another ACP agent a graph can use as a member: started (command) or remote (url), never both."""

    command: list[str] | None = Field(None, min_length=1)
    """The program and its arguments, as a list: `["codex-acp"]`."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables added for it (crow's model keys are never passed on their own)."""
    env_inherit: list[str] = Field(default_factory=list)
    """Variables it inherits from crow's environment besides the allow list (its own key: ANTHROPIC_API_KEY)."""
    url: str | None = None
    """A `crow serve` (or any ACP agent) over WebSocket: ws://host:port/acp or wss://…."""
    token_env: str | None = Field(None, min_length=1)
    """The environment variable that holds the bearer token of `url`."""
    mcp_servers: bool = False
    """Pass it the MCP servers the editor gave the session (their env and headers may hold secrets)."""

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("ws://", "wss://")):
            raise ValueError(f"must start with ws:// or wss://, got {value!r}")
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> AgentConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("needs exactly one of `command` (a list: the agent crow starts) or `url` (a remote agent)")
        if self.url is not None and (self.env or self.env_inherit):
            raise ValueError("`env` is for a `command`, not for a `url` (`env_inherit` too)")
        if self.command is not None and self.token_env:
            raise ValueError("`token_env` is for a `url`, not for a `command`")
        return self
