"""Which MCP servers a session connects: the editor's (ACP session/new) and config.toml's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ..config import McpServerConfig


@dataclass
class ServerSpec:
    """One MCP server to connect, from the editor's session/new or from config.toml."""

    name: str
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    url: str | None = None
    transport: Literal["stdio", "http", "sse"] = "stdio"
    headers: dict[str, str] = field(default_factory=dict)
    confine: list[str] | str | None = None
    """A sandboxed stdio server: the argv its command runs behind, or why it cannot be sandboxed (it does
    not start then); None: not sandboxed."""
    from_client: bool = False
    """Named by the editor (ACP session/new), not config.toml: under crow serve, its URL is guarded."""


Confine = Callable[["McpServerConfig"], "list[str] | str"]
"""The sandbox prefix for a configured server with `sandbox = true` (editor/sandbox.py server_prefix)."""
NO_SANDBOX = "crow offers no sandbox here"


def server_specs(
    editor_servers: list[Any], configured: dict[str, McpServerConfig], confine: Confine | None = None
) -> list[ServerSpec]:
    """The editor's servers (ACP stdio, http or sse), then config.toml's, unless the editor has one by that name."""
    from ..config import resolve_command

    specs = [_from_acp(server) for server in editor_servers]
    names = {spec.name for spec in specs}
    for name, server in configured.items():
        if server.enabled and name not in names:
            transport = "stdio" if server.command else server.transport
            command = resolve_command(server.command) if server.command else None
            spec = ServerSpec(name, command, server.args, server.env, server.url, transport, server.headers)
            if server.sandbox:
                spec.confine = confine(server) if confine else NO_SANDBOX  # asked for: never without one
            specs.append(spec)
    return specs


def check_servers(editor_servers: list[Any] | None) -> None:
    """Refuse, before any session exists, an editor's server of a kind crow did not advertise."""
    for server in editor_servers or []:
        _from_acp(server)


def _from_acp(server: Any) -> ServerSpec:
    """One server of session/new's mcpServers, by its declared ACP type (stdio, http or sse)."""
    from acp import RequestError
    from acp.schema import HttpMcpServer, McpServerStdio, SseMcpServer

    if isinstance(server, McpServerStdio):
        env = {item.name: item.value for item in server.env or []}
        return ServerSpec(server.name, server.command, list(server.args or []), env)
    if isinstance(server, HttpMcpServer | SseMcpServer):
        headers = {item.name: item.value for item in server.headers or []}
        return ServerSpec(server.name, url=server.url, transport=server.type, headers=headers, from_client=True)
    # crow advertises http and sse (capabilities.py); anything else is the client's mistake, said plainly
    name, kind = getattr(server, "name", "?"), getattr(server, "type", type(server).__name__)
    raise RequestError.invalid_params({"mcpServers": f"MCP server {name!r}: transport {kind!r} is not supported"})
