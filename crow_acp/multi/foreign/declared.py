"""The ForeignAgent one `[agents.NAME]` table declares: for graphs (crow.patterns.member, make_member)
and for the `delegate` tool's helpers (crow/presets.py), one way for both."""

from __future__ import annotations

import os

from ...config import AgentConfig, Config
from ...errors import ConfigError
from ...store import SessionStore
from .link import RemoteTarget, StdioTarget, Target
from .member import ForeignAgent


def declared_agent(
    name: str, settings: AgentConfig, config: Config | None = None, *, store: SessionStore | None = None
) -> ForeignAgent:
    """`store` keeps its crow sessions (None: the one `config` names). A `token_env` that is not set is a
    ConfigError naming it."""
    target: Target
    if settings.command is not None:
        inherited = {var: os.environ[var] for var in settings.env_inherit if var in os.environ}
        env = {**inherited, **settings.env}
        target = StdioTarget(list(settings.command), env, mcp_servers=settings.mcp_servers)
    else:
        assert settings.url is not None  # AgentConfig holds exactly one of command and url
        token = os.environ.get(settings.token_env) if settings.token_env else None
        if settings.token_env and not token:
            raise ConfigError(f"[agents.{name}]: the token variable {settings.token_env} is not set")
        target = RemoteTarget(settings.url, token, settings.mcp_servers)
    return ForeignAgent(target, name=name, config=config, store=store)
