"""Foreign members: any ACP agent as a node of a graph (crow_acp.multi.foreign).

chain(coder_agent(), acp_member(["codex-acp"], name="codex"), reviewer_agent())
chain(coder_agent(), remote_member("ws://host:8765/acp", name="remote", token=...))
chain(coder_agent(), member("codex"))          # [agents.codex] in config.toml
"""

from __future__ import annotations

from crow_acp import load_config
from crow_acp.config import AgentConfig, Config
from crow_acp.errors import ConfigError
from crow_acp.multi.foreign import ForeignAgent, RemoteTarget, StdioTarget
from crow_acp.multi.foreign.declared import declared_agent
from crow_acp.store import SessionStore


def acp_member(
    command: list[str],
    *,
    name: str,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    mcp_servers: bool = False,
) -> ForeignAgent:
    """A stdio ACP agent crow starts (under the guard that kills it with crow) as a member named `name`;
    `mcp_servers`: pass it the MCP servers the editor gave the session."""
    if not command or not all(isinstance(part, str) and part for part in command):
        raise ValueError("acp_member() needs a command as a non-empty list of strings, e.g. ['codex-acp']")
    return ForeignAgent(StdioTarget(list(command), dict(env or {}), cwd, mcp_servers), name=name)


def remote_member(url: str, *, name: str, token: str | None = None, mcp_servers: bool = False) -> ForeignAgent:
    """A `crow serve` (or any ACP agent) over WebSocket at `url` (ws:// or wss://…/acp), with a bearer token;
    `mcp_servers` as for acp_member."""
    if not url.startswith(("ws://", "wss://")):
        raise ValueError(f"remote_member() needs a ws:// or wss:// URL, got {url!r}")
    return ForeignAgent(RemoteTarget(url, token, mcp_servers), name=name)


def member(name: str, config: Config | None = None) -> ForeignAgent:
    """The member `[agents.NAME]` of config.toml declares; an unknown name is a ConfigError naming the known ones."""
    config = config or load_config()
    settings = config.agents.get(name)
    if settings is None:
        known = ", ".join(sorted(config.agents)) or "none"
        raise ConfigError(f"no agent {name!r} in [agents] of config.toml (declared: {known})")
    return make_member(name, settings, config)


def make_member(
    name: str, settings: AgentConfig, config: Config | None = None, *, store: SessionStore | None = None
) -> ForeignAgent:
    """The member one `[agents.NAME]` table declares; `store` keeps its crow sessions (None: the config's)."""
    return declared_agent(name, settings, config, store=store)
