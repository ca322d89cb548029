"""Foreign members: any ACP agent as a node of a graph (crow_acp.multi.foreign).

chain(coder_agent(), acp_member(["codex-acp"], name="codex"), reviewer_agent())
chain(coder_agent(), remote_member("ws://host:8765/acp", name="remote", token=...))
chain(coder_agent(), member("codex"))          # [agents.codex] in config.toml
"""

from __future__ import annotations

import os

from crow_acp import load_config
from crow_acp.config import AgentConfig, Config
from crow_acp.errors import ConfigError
from crow_acp.multi.foreign import ForeignAgent, RemoteTarget, StdioTarget


def acp_member(
    command: list[str], *, name: str, env: dict[str, str] | None = None, cwd: str | None = None
) -> ForeignAgent:
    """A stdio ACP agent crow starts (under the guard that kills it with crow) as a member named `name`."""
    if not command or not all(isinstance(part, str) and part for part in command):
        raise ValueError("acp_member() needs a command as a non-empty list of strings, e.g. ['codex-acp']")
    return ForeignAgent(StdioTarget(list(command), dict(env or {}), cwd), name=name)


def remote_member(url: str, *, name: str, token: str | None = None) -> ForeignAgent:
    """A `crow serve` (or any ACP agent) over WebSocket at `url` (ws:// or wss://…/acp), with a bearer token."""
    if not url.startswith(("ws://", "wss://")):
        raise ValueError(f"remote_member() needs a ws:// or wss:// URL, got {url!r}")
    return ForeignAgent(RemoteTarget(url, token), name=name)


def member(name: str, config: Config | None = None) -> ForeignAgent:
    """The member `[agents.NAME]` of config.toml declares; an unknown name is a ConfigError naming the known ones."""
    config = config or load_config()
    settings = config.agents.get(name)
    if settings is None:
        known = ", ".join(sorted(config.agents)) or "none"
        raise ConfigError(f"no agent {name!r} in [agents] of config.toml (declared: {known})")
    return make_member(name, settings, config)


def make_member(name: str, settings: AgentConfig, config: Config | None = None) -> ForeignAgent:
    """The member one `[agents.NAME]` table declares (the delegate tool builds its helpers with this)."""
    if settings.command is not None:
        return ForeignAgent(StdioTarget(list(settings.command), dict(settings.env)), name=name, config=config)
    assert settings.url is not None  # AgentConfig holds exactly one of command and url
    token = os.environ.get(settings.token_env) if settings.token_env else None
    if settings.token_env and not token:
        raise ConfigError(f"[agents.{name}]: the token variable {settings.token_env} is not set")
    return ForeignAgent(RemoteTarget(settings.url, token), name=name, config=config)
