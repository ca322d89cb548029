"""Remote MCP servers' answers (streamable HTTP and SSE) with lone surrogate escapes repaired.

The MCP SDK's JSON parser rejects a whole message for one `"\\ud800"`: over streamable HTTP the call
then fails with a parse error, over SSE it waits out `timeouts.mcp_call`. So crow's HTTP client
repairs response bodies as they stream in, before the SDK parses them (see mcp_relay.StreamRepair).
A compressed body is left alone (the SDK's error, or crow's inbox, still ends such a call).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import httpx2

from .relay import StreamRepair

if TYPE_CHECKING:
    from .address_guard import ClientUrls


def http_client(
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: Any = None,
    *,
    guard: ClientUrls | None = None,
) -> httpx2.AsyncClient:
    """The MCP SDK's client factory, with repaired answers (the SDK's defaults otherwise); with `guard`, a
    crow serve client's server, reached only at the addresses address_guard.py allows."""
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    timeout = timeout or httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
    inner: httpx2.AsyncBaseTransport = httpx2.AsyncHTTPTransport()
    if guard is not None:
        from .address_guard import GuardedTransport

        inner = GuardedTransport.build(guard, inner)
    return httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth, transport=RepairingTransport(inner))


class RepairingTransport(httpx2.AsyncBaseTransport):
    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        if response.headers.get("content-encoding", "identity").lower() != "identity":
            return response
        stream = _Repaired(response.stream)  # type: ignore[arg-type]
        return httpx2.Response(
            response.status_code, headers=response.headers, stream=stream, extensions=response.extensions
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Repaired(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream) -> None:
        self._inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        repair = StreamRepair()
        async for chunk in self._inner:
            if data := repair.feed(chunk):
                yield data
        if data := repair.flush():
            yield data

    async def aclose(self) -> None:
        await self._inner.aclose()
