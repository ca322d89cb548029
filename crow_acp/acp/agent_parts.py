"""What `AcpAgent(model, instructions=..., tools=[...], mcp_servers=[...])` turns into.

configured()   the config with the model and the MCP servers given in Python (over config.toml's)
AgentParts     the tools and instructions, as callbacks that stay around whatever set_callbacks sets:
               the tools first in begin_session (the prompt callback then lists them), the instructions
               last in begin_session and pre_request (added to whatever system prompt the others set)
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..api import HOOKS, CrowCallbacks, SessionAccess, Tool
from ..config import Config, McpServerConfig
from ..errors import ConfigError
from ..plugin.function_tool import as_tool

Instructions = str | Callable[[SessionAccess], str | Awaitable[str]]
"""Text added to the system prompt, or a function of the session giving it (sync or async), asked before each
model call."""

ADDED = "crow_instructions"
"""The session context key that remembers the text last added, so a changed text replaces it (also after load)."""
SEPARATOR = "\n\n"


def configured(config: Config, model: str | None, mcp_servers: Iterable[Any]) -> Config:
    """`config` with `model` (a model id or a profile name) and the servers given in Python, in ACP's shape."""
    update: dict[str, Any] = {}
    if model is not None:
        if not model.strip():
            raise ConfigError("AcpAgent(model=...) is empty: give a model id or a profile name")
        update["model"] = model
    servers = {name: server for name, server in (_server(s) for s in mcp_servers)}
    if servers:
        update["mcp_servers"] = {**config.mcp_servers, **servers}
    return config.model_copy(update=update) if update else config


def _server(server: Any) -> tuple[str, McpServerConfig]:
    """One ACP server (McpServerStdio, HttpMcpServer, SseMcpServer, or the same as a dict) as a configured one."""
    from acp.schema import HttpMcpServer, McpServerStdio, SseMcpServer

    try:
        acp_server = TypeAdapter(McpServerStdio | HttpMcpServer | SseMcpServer).validate_python(server)
    except ValidationError as exc:
        raise ConfigError(f"AcpAgent(mcp_servers=...): not an ACP MCP server: {exc.errors()[0]['msg']}") from exc
    if isinstance(acp_server, McpServerStdio):
        env = {item.name: item.value for item in acp_server.env}
        return acp_server.name, McpServerConfig(command=acp_server.command, args=list(acp_server.args), env=env)
    headers = {item.name: item.value for item in acp_server.headers}
    return acp_server.name, McpServerConfig(url=acp_server.url, transport=acp_server.type, headers=headers)


class AgentParts:
    """The agent's own tools and instructions, kept around the callbacks the user sets."""

    def __init__(self, tools: Sequence[Any], instructions: Instructions | None) -> None:
        self.tools: list[Tool] = [as_tool(t) for t in tools]
        names = [t.name for t in self.tools]
        if duplicate := next((name for name in names if names.count(name) > 1), None):
            raise ConfigError(f"AcpAgent(tools=...): two tools are named {duplicate!r}")
        self.instructions = instructions
        self._first = CrowCallbacks(begin_session=[self._add_tools]) if self.tools else CrowCallbacks()
        last = [self._instruct] if instructions is not None else []
        self._last = CrowCallbacks(begin_session=last, pre_request=list(last))

    def around(self, callbacks: CrowCallbacks) -> CrowCallbacks:
        """`callbacks` with these parts in their places (any copy of them already inside is taken out first)."""
        mine = set(map(id, self._first.all() + self._last.all()))
        theirs = CrowCallbacks(**{name: [c for c in getattr(callbacks, name) if id(c) not in mine] for name in HOOKS})
        return self._first + theirs + self._last

    async def _add_tools(self, session: SessionAccess) -> None:
        for each in self.tools:
            session.add_tool(each)

    async def _instruct(self, session: SessionAccess) -> None:
        extra = self.instructions if isinstance(self.instructions, str) else self.instructions(session)  # type: ignore[misc]
        if inspect.isawaitable(extra):
            extra = await extra
        extra = str(extra)
        entries = session.entries()
        current = entries[0].message.get("content") or "" if entries and entries[0].message["role"] == "system" else ""
        current = current if isinstance(current, str) else ""
        last = session.get_context(ADDED)
        base = current
        if isinstance(last, str) and last and (current == last or current.endswith(SEPARATOR + last)):
            base = current[: -len(last)].removesuffix(SEPARATOR)
        wanted = f"{base}{SEPARATOR}{extra}" if base else extra
        if wanted != current:
            session.set_system_prompt(wanted)
        if last != extra:
            session.set_context(ADDED, extra)
