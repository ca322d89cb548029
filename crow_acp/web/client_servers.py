"""The MCP servers a `crow serve` client may name: HTTP and SSE ones, and commands only as the operator allows.

Over stdio the editor is the user's own and crow starts whatever stdio server it names. Over `crow serve`
a client is anyone holding the token (or, before issue 18, any web page), and a stdio server is a
command run on the server's machine as its user, at `session/new`, with no question and no model. So
a client's `mcpServers` entry that is not `"type": "http"` or `"type": "sse"` is a command, refused
unless the operator allowed that command (`--allow-client-command NAME`) or all (`--allow-client-commands`).
The server's own `[mcp_servers]` come from its config, not from clients, and are not checked here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

REMOTE = frozenset({"http", "sse"})
INVALID_PARAMS = -32602


@dataclass(frozen=True)
class ClientCommands:
    allow_all: bool = False
    allowed: frozenset[str] = frozenset()
    """`command` values (exactly as the client sends them) a client may start, whatever their arguments."""

    def refusal(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The JSON-RPC error for a message naming a command the operator did not allow, or None."""
        params = message.get("params")
        servers = params.get("mcpServers") if isinstance(params, dict) else None
        if self.allow_all or servers is None:
            return None
        if not isinstance(servers, list):
            return _error("mcpServers must be a list")
        for index, server in enumerate(servers):
            if isinstance(server, dict) and server.get("type") in REMOTE:
                continue
            command = server.get("command") if isinstance(server, dict) else None
            if not isinstance(command, str) or command not in self.allowed:
                return _error(
                    f"mcpServers[{index}] runs a command ({command!r}) on the server: crow serve starts only the "
                    "HTTP and SSE servers a client names, and the commands its operator allows "
                    "(--allow-client-command NAME); the server's own [mcp_servers] are available as configured",
                    index,
                )
        return None


def _error(text: str, index: int | None = None) -> dict[str, Any]:
    data = {"mcpServers": index} if index is not None else None
    return {"code": INVALID_PARAMS, "message": text, **({"data": data} if data else {})}
