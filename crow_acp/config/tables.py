"""The tables of settings: permissions, sandbox, sessions, timeouts, limits, compaction, prompt, store,
titles, delegation."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from .protected import DEFAULT_PROTECTED, check_pattern
from .sections import Policy, Section

MODE_ORDER = ("ask", "plan", "accept_edits", "auto", "full_access")
"""The permission modes from the least permissive to the most (policy/modes.py), for `max_mode`."""


class PermissionConfig(Section):
    default: Policy = "ask"
    """Policy for tools not marked read-only: ask, allow or deny."""
    tools: dict[str, Policy] = Field(default_factory=dict)
    """Per-tool overrides; keys are tool names or fnmatch patterns such as "time__*"."""
    default_mode: Literal["ask", "accept_edits", "auto", "plan", "full_access"] = "ask"
    """The permission mode of a new session (the editor's mode picker or /mode changes it per session)."""
    max_mode: Literal["ask", "accept_edits", "auto", "plan", "full_access"] = "full_access"
    """The most permissive mode a session may have (ask < plan < accept_edits < auto < full_access); below
    full_access no command runs outside the sandbox. `crow serve --max-mode` sets it (default auto)."""
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

    @model_validator(mode="after")
    def _default_within_max(self) -> PermissionConfig:
        if MODE_ORDER.index(self.default_mode) > MODE_ORDER.index(self.max_mode):
            raise ValueError(f"default_mode {self.default_mode!r} is above max_mode {self.max_mode!r}")
        return self


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
    """Address space of each process of a command, in MiB; also the size of its private /tmp."""
    inherit: Literal["core", "all"] = "core"
    """What commands, MCP servers and members inherit of crow's environment: the core allow list (locale,
    PATH, HOME, TERM, proxies, toolchain homes), or all of it but secrets and agent sockets."""
    env_inherit: list[str] = Field(default_factory=list)
    """More variables (fnmatch patterns) children inherit, whatever their names."""
    home_visible: list[str] = Field(default_factory=list)
    """Paths below $HOME shown (read-only) to sandboxed commands besides the toolchain directories."""


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
    max_helpers: int = Field(16, ge=0)
    """Helper sessions one editor prompt may start, at every depth together; more delegate calls are refused."""
    max_helper_calls: int = Field(200, ge=0)
    """Model calls one editor prompt's helpers may make together; a helper past it stops with the reason."""


class TelemetryConfig(Section):
    traces_endpoint: str | None = None
    """An OTLP/HTTP collector's base URL (…/v1/traces is added): every turn is a trace there. The
    OTEL_EXPORTER_OTLP_ENDPOINT variable (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) overrides it."""
    record_content: bool = False
    """Also record prompts, replies, tool arguments and results in spans (redacted of keys, cut to 8 KB)."""
    log_format: Literal["text", "json"] = "text"
    """crow.log's and stderr's lines: text, or one JSON object per line (--log-format, CROW_LOG_FORMAT)."""

    @field_validator("traces_endpoint")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"must start with http:// or https://, got {value!r}")
        return value


class CheckpointConfig(Section):
    enabled: bool = True
    """Before each prompt, keep the files under the session's roots, so /rewind can put them back."""
    max_file_bytes: int = Field(5 * 1024 * 1024, ge=0)
    """A file larger than this is not kept (a rewind names it "not restored")."""
    max_session_bytes: int = Field(500 * 1024 * 1024, ge=0)
    """The most the checkpoints of one session keep; files past it are not kept."""
    max_files: int = Field(20_000, ge=1)
    """Files under the roots past which a prompt gets no checkpoint (a rewind to it keeps the files): crow
    started in a home directory walks this many, not all of them, before each prompt."""
