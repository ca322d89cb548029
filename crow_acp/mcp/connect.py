"""Opening one MCP server's connection (stdio, streamable HTTP or SSE), and naming its failures."""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

from .specs import ServerSpec


def import_client(transport: str) -> None:
    """The MCP client's modules for a transport (seconds on a busy machine: the caller runs this in a thread)."""

    if transport == "sse":
        pass
    elif transport == "http":
        pass
    if transport in ("sse", "http"):
        from . import http as mcp_http  # noqa: F401


async def open_client(
    spec: ServerSpec,
    *,
    cwd: str,
    call_timeout: float,
    stack: AsyncExitStack,
    on_message: Any,
    on_end: Callable[[], None],
    on_elicit: Any = None,
) -> Any:
    """The SDK's Client for the server (not yet entered); `on_end` is called when the server's side ends.

    `on_message` is the SDK's message handler (notifications such as list_changed); `on_elicit` its
    elicitation callback (the server's questions for the user, elicit.py)."""
    from mcp import Client

    from .inbox import watched

    transport = watched(await _transport(spec, cwd, call_timeout, stack), on_end)
    return Client(
        transport, read_timeout_seconds=call_timeout, message_handler=on_message, elicitation_callback=on_elicit
    )


async def _transport(spec: ServerSpec, cwd: str, call_timeout: float, stack: AsyncExitStack) -> Any:
    if spec.transport == "stdio":
        from .stdio import stdio_transport

        return stdio_transport(spec, cwd)
    from .address_guard import active

    guard = active() if spec.from_client else None  # a crow serve client's server: its addresses checked
    if spec.transport == "sse":
        from mcp.client.sse import sse_client

        from .http import http_client

        return sse_client(
            spec.url or "",
            headers=spec.headers,
            timeout=30,
            sse_read_timeout=24 * 3600,
            httpx_client_factory=functools.partial(http_client, guard=guard),
        )
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    from .http import http_client

    timeout = httpx2.Timeout(30, read=call_timeout + 30)
    http = await stack.enter_async_context(http_client(headers=spec.headers, timeout=timeout, guard=guard))
    return streamable_http_client(spec.url or "", http_client=http)


def connection_lost(exc: Exception) -> bool:
    from mcp import MCPError
    from mcp.types import CONNECTION_CLOSED

    # The SDK's own closed-connection error; a server may use -32000 for its errors too, hence the message.
    return isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED and exc.message == "Connection closed"


def describe_failure(exc: BaseException) -> str:
    """The innermost message of a (nested) ExceptionGroup, which is what connect failures raise."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
