"""Configuration: command line, then environment, then $CROW_HOME/config.toml, then defaults.

Every table is a `Section`: an unknown key, a wrong type or an impossible value is a ConfigError that
names the file, the table and the key (see errors.py). To add a key, add one annotated field
with a default and a docstring to its section; a new table is a new Section subclass and one field
on Config. Nothing else needs to change.
"""

from __future__ import annotations

import os
import shutil
import sys
import tomllib
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..errors import ConfigError
from .protected import DEFAULT_PROTECTED, check_pattern

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
    currency: str = "USD"
    """ISO 4217 code of the prices."""
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
    url: str | None = None
    """A `crow serve` (or any ACP agent) over WebSocket: ws://host:port/acp or wss://…."""
    token_env: str | None = Field(None, min_length=1)
    """The environment variable that holds the bearer token of `url`."""

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
        if self.url is not None and self.env:
            raise ValueError("`env` is for a `command`, not for a `url`")
        if self.command is not None and self.token_env:
            raise ValueError("`token_env` is for a `url`, not for a `command`")
        return self


class PermissionConfig(Section):
    default: Policy = "ask"
    """Policy for tools not marked read-only: ask, allow or deny."""
    tools: dict[str, Policy] = Field(default_factory=dict)
    """Per-tool overrides; keys are tool names or fnmatch patterns such as "time__*"."""
    default_mode: Literal["ask", "accept_edits", "auto", "plan", "full_access"] = "ask"
    """The permission mode of a new session (the editor's mode picker or /mode changes it per session)."""
    timeout: float = Field(default=600.0, gt=0)
    """Seconds to wait for the editor's answer to a permission request; then the call is refused."""
    protected: list[str] = Field(default_factory=lambda: list(DEFAULT_PROTECTED))
    """Paths whose writes always ask (fnmatch patterns below the roots); VCS internals always are."""
    run_allow: list[str] = Field(default_factory=list)
    """Tool patterns `crow run --allow` allows for one run, unless a config rule denies them; not in config.toml."""
    run_deny: list[str] = Field(default_factory=list)
    """Tool patterns `crow run --deny` denies for one run, over every other rule; not in config.toml."""

    @field_validator("protected")
    @classmethod
    def _check_protected(cls, value: list[str]) -> list[str]:
        return [check_pattern(pattern) for pattern in value]


class SandboxConfig(Section):
    """How crow's local commands are confined (bubblewrap; see docs/configuration.md)."""

    enabled: bool = True
    """Run local commands in the sandbox where bubblewrap works; false runs them as the user, after a question."""
    network: bool = False
    """Sandboxed commands reach the network; false leaves them only a loopback of their own."""
    writable: list[str] = Field(default_factory=list)
    """Paths writable besides the session's roots (~ expanded; ignored in plan mode's read-only sandbox)."""
    hidden: list[str] = Field(default_factory=list)
    """Paths made invisible besides crow's home and the usual secret stores in $HOME (~ expanded)."""
    max_processes: int = Field(256, ge=1)
    """Processes (and threads) one command may have at once."""
    cpu_seconds: int = Field(300, ge=1)
    """CPU seconds each process of a command may use."""
    memory_mb: int = Field(4096, ge=16)
    """Address space of each process of a command, in MiB."""


class SessionsConfig(Section):
    max_open: int = Field(default=64, ge=1)
    """Sessions kept in memory; past it the least recently used idle one is closed (end_session runs)."""
    idle_minutes: float | None = Field(default=None, gt=0)
    """Close a session idle this long (checked whenever a session opens or is prompted); None: never."""


class Timeouts(Section):
    mcp_connect: float = Field(30.0, gt=0)
    """Seconds one MCP server may take to start and list its tools."""
    mcp_call: float = Field(120.0, gt=0)
    """Seconds one tool call may take."""
    elicitation: float = Field(300.0, gt=0)
    """Seconds the user has to answer a question (an MCP server's, or the model's `ask_user`); then it is cancelled."""
    model: float = Field(600.0, gt=0)
    """Seconds one whole model request may take: from sending it (retries included) to its last chunk."""
    model_first_byte: float = Field(300.0, gt=0)
    """Seconds from sending a model request (retries included) until its reply's first chunk arrives."""
    model_idle: float = Field(120.0, gt=0)
    """Seconds a streaming reply may go without a chunk."""
    member_start: float = Field(60.0, gt=0)
    """Seconds a foreign member ([agents]) may take to start, initialize and open its session."""
    member_idle: float = Field(600.0, gt=0)
    """Seconds a foreign member's turn may go without an update (a permission question counts as one)."""


class LimitsConfig(Section):
    """Bounds on one model reply, whatever the model sends."""

    parallel_tool_calls: int = Field(8, ge=1, le=256)
    """Tool calls of one reply that run at once; the others wait (pending) for a free slot."""
    tool_calls_per_reply: int = Field(64, ge=1, le=10_000)
    """Tool calls of one reply that run at all; each one past it gets an error result instead."""
    reply_chars: int = Field(4_000_000, ge=1_000)
    """Characters of one reply (text, reasoning and tool arguments); past it the reply is cut."""


class CompactionConfig(Section):
    threshold: int | None = Field(None, gt=0)
    """Prompt tokens that trigger compaction; None means 80% of the context window."""
    keep_last: int = Field(10, ge=0)
    """Recent messages kept verbatim (the cut moves to a user-turn boundary)."""


class PromptConfig(Section):
    system_path: str | None = None
    """A Jinja2 template that replaces the default system prompt."""


class StoreConfig(Section):
    url: str | None = None
    """postgresql://… keeps sessions in PostgreSQL (CROW_DATABASE_URL overrides); unset: SQLite under home."""
    lease_ttl: float = Field(30.0, gt=0)
    """Seconds a session stays locked to a crow process that stopped renewing (one on another machine)."""


class TitleConfig(Section):
    enabled: bool = True
    """After the first turn, a short side call names the session (the truncated prompt until then)."""
    model: str | None = None
    """The [models] profile that writes titles; None uses the session's own model."""


class DelegateConfig(Section):
    enabled: bool = False
    """Offer the model the `delegate` tool: a self-contained task run in a fresh child session."""
    agents: list[str] = Field(default_factory=lambda: ["crow"], min_length=1)
    """The helpers `delegate` may use, the first by default; "crow" is a crow sub-agent."""
    max_depth: int = Field(2, ge=1, le=8)
    """Levels of delegation below the editor's session: a helper that deep gets no `delegate` tool."""


class Config(Section):
    home: Path = Field(Path("~/.crow").expanduser(), strict=False)
    """Crow's directory ($CROW_HOME); set by crow, not in config.toml."""
    model: str = Field("default", min_length=1)
    """A profile name from [models], or a raw model id."""
    models: dict[str, ModelProfile] = Field(default_factory=dict)
    """Model profiles by name; Zed's model picker lists them."""
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    """MCP servers every session starts, by name."""
    agents: dict[str, AgentConfig] = Field(default_factory=dict)
    """Other ACP agents by name, for graphs (crow.patterns.member(NAME))."""
    permissions: PermissionConfig = Field(default_factory=PermissionConfig)
    """Which tools run without asking."""
    timeouts: Timeouts = Field(default_factory=Timeouts)
    """Time limits in seconds."""
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    """Bounds on one model reply: its tool calls and its size."""
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    """When and how long sessions are compacted."""
    prompt: PromptConfig = Field(default_factory=PromptConfig)
    """The system prompt."""
    titles: TitleConfig = Field(default_factory=TitleConfig)
    """How sessions get their titles."""
    sessions: SessionsConfig = Field(default_factory=SessionsConfig)
    """Which sessions stay in memory."""
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    """How local commands are confined."""
    store: StoreConfig = Field(default_factory=StoreConfig)
    """Where sessions are kept."""
    delegate: DelegateConfig = Field(default_factory=DelegateConfig)
    """The `delegate` tool."""
    max_steps: int = Field(50, ge=1)
    """Model calls per prompt before the turn stops with max_turn_requests."""
    max_retries: int = Field(3, ge=0, le=20)
    """Retries with backoff on 429, 5xx and timeouts (never on other 4xx)."""

    def profile(self) -> ModelProfile:
        """The active model profile. A profile's own base_url wins over OPENAI_BASE_URL."""
        if self.model in self.models:
            profile = self.models[self.model]
        else:
            profile = ModelProfile() if self.model == "default" else ModelProfile(model=self.model)
        if profile.base_url is None and (env_url := os.environ.get("OPENAI_BASE_URL")):
            profile = profile.model_copy(update={"base_url": env_url})
        return profile

    def api_key(self) -> str:
        """The API key, or a ConfigError that says exactly what to set."""
        profile = self.profile()
        key = os.environ.get(profile.api_key_env) or profile.api_key
        if key:
            return key
        if profile.base_url and urlsplit(profile.base_url).hostname != OPENAI_HOST:
            return "none"  # local OpenAI-compatible servers (llama.cpp, vLLM, Ollama) often need no key
        raise ConfigError(
            f"No model API key: set {profile.api_key_env} in the environment "
            f"(in Zed: agent_servers.Crow.env), or set OPENAI_BASE_URL to a server that needs no key."
        )

    def warnings(self) -> list[str]:
        """Things that work but are probably not what was meant; shown by `crow run` and `crow check`."""
        from .errors import closest

        if self.model == "default" or self.model in self.models or not self.models:
            return []
        near = closest(self.model, list(self.models))
        hint = f"; did you mean {near!r}?" if near else ""
        return [f"model {self.model!r} is not a profile in [models]; it is sent as a raw model id{hint}"]

    @property
    def db_path(self) -> Path:
        return self.home / "sessions.db"

    @property
    def log_dir(self) -> Path:
        return self.home / "logs"

    @property
    def config_path(self) -> Path:
        return self.home / "config.toml"


def resolve_command(command: str) -> str:
    """A stdio server's program as it will run when Zed starts crow by its absolute path, with no
    virtual environment on PATH: a path as written (~ expanded), else PATH, else next to crow's Python."""
    if os.sep in command:
        return os.path.expanduser(command)
    if shutil.which(command):
        return command
    beside = Path(sys.executable).parent / command
    return str(beside) if os.access(beside, os.X_OK) else command


def crow_home() -> Path:
    return Path(os.environ.get("CROW_HOME") or "~/.crow").expanduser()


def read_toml(path: Path) -> dict[str, Any]:
    """config.toml as a dict ({} when absent), or a ConfigError naming the file."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc


def load_config(home: Path | None = None, **overrides: Any) -> Config:
    """Read config.toml under home and apply command-line overrides (None values are ignored)."""
    from .errors import describe

    home = (home or crow_home()).expanduser()
    path = home / "config.toml"
    data = read_toml(path)
    if "home" in data:
        raise ConfigError(f"{path}: `home`: set CROW_HOME or --home instead of a `home` key")
    permissions = data.get("permissions")
    for key in RUN_ONLY:
        if isinstance(permissions, dict) and key in permissions:
            flag = key.removeprefix("run_")
            raise ConfigError(
                f"{path}: `[permissions]` `{key}`: set by `crow run --{flag}` for one run; use [permissions.tools]"
            )
    if env_model := os.environ.get("CROW_MODEL"):
        data["model"] = env_model
    data.update({key: value for key, value in overrides.items() if value is not None})
    data["home"] = home
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError("\n".join(f"{path}: {line}" for line in describe(exc, data, Config))) from exc
    env_url = os.environ.get("OPENAI_BASE_URL")
    if env_url and not env_url.startswith(("http://", "https://")):  # else every model call fails, after retries
        raise ConfigError(f"OPENAI_BASE_URL {url_problem(env_url)}")
    return config
