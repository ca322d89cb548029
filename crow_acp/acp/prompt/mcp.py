"""A session's MCP servers in its prompts: waiting for them, their failures, their prompts as commands.

Servers connect in the background (session/new does not wait); the first prompt waits for those still
starting and shows it as a "Connecting to MCP servers" step. When a server comes up or its prompts
change, the editor gets the new command list; a server that failed is shown once.

A prompt command (`/server:prompt args`) is expanded into the user message the server's prompt
produces, then the turn runs as usual. A `resource_link` whose URI is one of a ready server's
resources is read with `resources/read` and sent inline, as an editor's embedded resource would be.
"""

from __future__ import annotations

import re
import shlex
import uuid
from typing import TYPE_CHECKING, Any

from ...api import SlashCommand
from ...errors import PromptRefused
from ...events import ActivityReported, CommandsChanged, NoticeRaised
from ...mcp.host import McpHost
from ...util.secrets import redact

if TYPE_CHECKING:
    from ...core.session import Session
    from ...mcp.host import McpServer

CONNECTING = "Connecting to MCP servers"


def attach(session: Session) -> None:
    """Tell the editor about the commands whenever a server comes up or changes its lists."""

    shown: list[tuple[str, str]] = []

    async def changed(server: McpServer) -> None:
        await report_failures(session)
        prompts = [(c.name, c.hint or "") for c in prompt_commands(session)]
        if prompts != shown:  # most servers have no prompts: nothing to tell
            shown[:] = prompts
            await session.emit(CommandsChanged(session.id, tuple(all_commands(session))))

    McpHost.of(session.mcp).on_change = changed


async def report_failures(session: Session) -> None:
    """Show each MCP server that failed to start or died later, once (as a notice to a client that takes
    them, else as a failed tool call); the session goes on without it."""
    for server in McpHost.of(session.mcp).new_failures():
        title = f"MCP server {server.spec.name!r} is unavailable"
        report = ActivityReported(session.id, f"mcp-{uuid.uuid4().hex[:8]}", title, "failed", "other", server.error)
        await session.emit(NoticeRaised(session.id, "warning", title, server.error, instead=report))


def all_commands(session: Session) -> list[SlashCommand]:
    return [*session.commands.values(), *prompt_commands(session)]


async def wait_for_servers(session: Session) -> None:
    """Wait for servers still starting (each up to its connect timeout), shown as one step; cancellable."""
    if not (waiting := McpHost.of(session.mcp).connecting()):
        return
    step = f"mcp-connect-{uuid.uuid4().hex[:8]}"
    names = ", ".join(server.spec.name for server in waiting)
    await session.emit(ActivityReported(session.id, step, CONNECTING, "in_progress", "other", f"Waiting for {names}"))
    with session.control.cancellable() as scope:  # session/cancel stops the wait
        await McpHost.of(session.mcp).wait_connecting()
    cancelled = scope.cancelled_caught
    ready = [server.spec.name for server in waiting if server.status == "ready"]
    status: Any = "completed" if len(ready) == len(waiting) else "failed"
    summary = f"Ready: {', '.join(ready) or 'none'}" + (f" (of {names})" if status == "failed" else "")
    if cancelled:
        summary = f"Cancelled; {summary[0].lower()}{summary[1:]}; the rest keep starting in the background"
    await session.emit(ActivityReported(session.id, step, CONNECTING, status, "other", summary))


# ---- Prompts as commands, resources read ----

MAX_RESOURCE_CHARS = 200_000
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def command_name(server: McpServer, prompt: Any) -> str:
    return f"{_UNSAFE.sub('_', server.spec.name)}:{_UNSAFE.sub('_', prompt.name)}"


def prompt_commands(session: Session) -> list[SlashCommand]:
    """The ready servers' prompts as commands for available_commands_update."""
    return [
        SlashCommand(
            command_name(server, prompt),
            prompt.description or f"MCP prompt from {server.spec.name}",
            _expanded_elsewhere,
            hint=_hint(prompt) or None,
        )
        for server in McpHost.of(session.mcp).ready()
        for prompt in server.prompts
    ]


async def _expanded_elsewhere(session: Any, argument: str) -> None:
    """Never runs: the agent expands MCP prompt commands into the user message (expand below)."""


def _hint(prompt: Any) -> str:
    return " ".join(a.name if a.required else f"[{a.name}]" for a in prompt.arguments or [])


def _find(session: Session, name: str) -> tuple[McpServer, Any] | None:
    for server in McpHost.of(session.mcp).ready():
        for prompt in server.prompts:
            if command_name(server, prompt) == name:
                return server, prompt
    return None


async def expand(session: Session, blocks: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """The blocks a `/server:prompt args` text stands for; other prompts come back unchanged."""
    name, _, argument = text[1:].partition(" ") if text.startswith("/") else ("", "", "")
    if not (found := _find(session, name)):
        return blocks
    server, prompt = found
    arguments = _arguments(prompt, argument.strip(), name)
    from mcp import MCPError

    from ...mcp.tool import ServerUnavailable

    try:
        result = await server.get_prompt(prompt.name, arguments)
    except (MCPError, ServerUnavailable, OSError, ValueError) as exc:  # ValueError: a malformed answer
        raise PromptRefused(f"/{name} failed: {exc}") from exc
    roles = {message.role for message in result.messages}
    return [_block(message, labelled=roles != {"user"}) for message in result.messages]


def _arguments(prompt: Any, argument: str, name: str) -> dict[str, str]:
    """`key=value` pairs, or values in the prompt's argument order; one argument takes the whole text."""
    declared = prompt.arguments or []
    if len(declared) == 1 and not argument.startswith(f"{declared[0].name}="):
        values = {declared[0].name: argument} if argument else {}
    else:
        try:
            words = shlex.split(argument)
        except ValueError as exc:
            raise PromptRefused(f"/{name}: {exc} in the arguments") from exc
        named = dict(word.split("=", 1) for word in words if "=" in word)
        free = [word for word in words if "=" not in word]
        unnamed = [a.name for a in declared if a.name not in named]
        if len(free) > len(unnamed):
            raise PromptRefused(f"/{name} takes {_hint(prompt) or 'no arguments'}; got {argument!r}")
        # Fewer values than names: the rest stay unset (and are reported below when required).
        values = {**dict(zip(unnamed, free, strict=False)), **named}
    unknown = set(values) - {a.name for a in declared}
    missing = [a.name for a in declared if a.required and not values.get(a.name)]
    if unknown or missing:
        problem = f"unknown {', '.join(sorted(unknown))}" if unknown else f"missing {', '.join(missing)}"
        raise PromptRefused(f"/{name} takes {_hint(prompt) or 'no arguments'} ({problem})")
    return values


def _block(message: Any, *, labelled: bool) -> dict[str, Any]:
    content = message.content
    prefix = f"[{message.role}] " if labelled else ""
    match content.type:
        case "text":
            return {"type": "text", "text": prefix + content.text}
        case "image":
            return {"type": "image", "mimeType": content.mime_type, "data": content.data}
        case "resource":
            return {
                "type": "resource",
                "resource": content.resource.model_dump(mode="json", by_alias=True, exclude_none=True),
            }
        case "resource_link":
            return {"type": "resource_link", "uri": str(content.uri), "name": content.name}
    return {"type": "text", "text": f"{prefix}[{content.type} content]"}


async def inline_resources(session: Session, blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Resource links to a ready server's resources, read through that server."""
    owners = {uri: server for server in McpHost.of(session.mcp).ready() for uri in server.resources}
    if not owners:
        return blocks
    return [
        await _read(owners[b["uri"]], b) if b.get("type") == "resource_link" and b.get("uri") in owners else b
        for b in blocks
    ]


async def _read(server: McpServer, link: dict[str, Any]) -> dict[str, Any]:
    from mcp import MCPError
    from mcp.types import TextResourceContents

    from ...mcp.tool import ServerUnavailable

    uri = link["uri"]
    try:
        result = await server.read_resource(uri)
    except (MCPError, ServerUnavailable, OSError, ValueError) as exc:  # ValueError: a malformed answer
        return {"type": "text", "text": f"[resource link: {uri} could not be read from {server.spec.name}: {exc}]"}
    texts = [c.text for c in result.contents if isinstance(c, TextResourceContents)]
    if not texts:
        mime = next((c.mime_type for c in result.contents if c.mime_type), "")
        return {
            "type": "resource",
            "resource": {"uri": uri, "blob": "", "mimeType": mime or "application/octet-stream"},
        }
    text = redact("\n".join(texts))  # before the cut, which could leave part of a key
    if len(text) > MAX_RESOURCE_CHARS:
        text = text[:MAX_RESOURCE_CHARS] + f"\n[... truncated {len(text) - MAX_RESOURCE_CHARS} characters]"
    return {"type": "resource", "resource": {"uri": uri, "text": text}}
