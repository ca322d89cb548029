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
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field, PrivateAttr, ValidationError

from ..errors import ConfigError
from .credentials import StoredCredentials, load_credentials, with_stored
from .sections import (
    API_CHOICES,
    OPENAI_HOST,
    RUN_ONLY,
    AgentConfig,
    McpServerConfig,
    ModelProfile,
    Section,
    url_problem,
)
from .tables import (
    CheckpointConfig,
    CompactionConfig,
    DelegateConfig,
    LimitsConfig,
    PermissionConfig,
    PromptConfig,
    SandboxConfig,
    SessionsConfig,
    StoreConfig,
    TelemetryConfig,
    Timeouts,
    TitleConfig,
)


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
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    """Traces (OpenTelemetry) and the log format."""
    checkpoints: CheckpointConfig = Field(default_factory=CheckpointConfig)
    """The files kept before each prompt, for /rewind."""
    max_steps: int = Field(50, ge=1)
    """Model calls per prompt before the turn stops with max_turn_requests."""
    max_retries: int = Field(3, ge=0, le=20)
    """Retries with backoff on 429, 5xx and timeouts (never on other 4xx)."""
    _stored: StoredCredentials | None = PrivateAttr(None)
    """What `crow setup` stored (credentials.py): the last source, after everything above."""

    def profile(self) -> ModelProfile:
        """The active model profile. A profile's own base_url wins over OPENAI_BASE_URL."""
        if self.model in self.models:
            profile = self.models[self.model]
        elif self.model == "default":  # no model named anywhere: the one `crow setup` stored, if any
            profile = ModelProfile(model=self._stored.model) if self._stored else ModelProfile()
        else:
            profile = ModelProfile(model=self.model)
        if profile.base_url is None and (env_url := os.environ.get("OPENAI_BASE_URL")):
            profile = profile.model_copy(update={"base_url": env_url})
        return with_stored(profile, self._stored)

    @property
    def stored(self) -> StoredCredentials | None:
        return self._stored

    def use_stored(self, stored: StoredCredentials | None) -> None:
        """Take these stored credentials from now on (after `crow setup` or a logout)."""
        self._stored = stored

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
            f"(in Zed: agent_servers.Crow.env), or set OPENAI_BASE_URL to a server that needs no key, "
            f"or run `crow setup`."
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


def check_helpers(config: Config, path: Path) -> None:
    """Every `[delegate] agents` name is "crow" or an `[agents.NAME]` table: a typo fails at load, not in a turn."""
    declared = ["crow", *sorted(config.agents)]
    for name in config.delegate.agents:
        if name not in declared:
            raise ConfigError(
                f"{path}: `[delegate]` `agents`: no helper {name!r}; declared: {', '.join(declared)} "
                f"(an ACP agent needs an [agents.{name}] table)"
            )


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
    stored = load_credentials(home)
    data["home"] = home
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError("\n".join(f"{path}: {line}" for line in describe(exc, data, Config))) from exc
    check_helpers(config, path)
    config.use_stored(stored)
    env_url = os.environ.get("OPENAI_BASE_URL")
    if env_url and not env_url.startswith(("http://", "https://")):  # else every model call fails, after retries
        raise ConfigError(f"OPENAI_BASE_URL {url_problem(env_url)}")
    if (env_api := os.environ.get("CROW_API")) and env_api not in API_CHOICES:  # else the first session fails
        raise ConfigError(f"CROW_API: {env_api!r} is not a model wire; choose one of {', '.join(API_CHOICES)}")
    return config
