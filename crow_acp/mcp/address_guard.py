"""Where a `crow serve` client's HTTP and SSE MCP servers may point: the public internet, and what the
operator lists (`--allow-client-url`). Not the server's own loopback, link-local (169.254.0.0/16 with
the cloud metadata services, fe80::/10), private (RFC 1918, fc00::/7, 100.64.0.0/10), unspecified or
multicast addresses: without this a client's `{"type": "http", "url": "http://169.254.169.254/..."}`
makes crow POST there, from inside the server's network, with the client's headers.

The check is made where the connection is made: the guarded client's network backend resolves the
name once, refuses it if ANY of its addresses is not global, and connects to an address it checked.
A name that resolves to a public address for a check and to 127.0.0.1 for the connect (DNS rebinding)
is never resolved twice; redirects and the SSE endpoint a server names go through the same backend;
proxies from the environment are not used (a proxy would resolve the name itself).

An allowed entry is a host (`mcp.internal`, `10.0.0.5`: any port), a `host:port`, or a URL prefix
(`http://10.0.0.5:8080/mcp`: URLs that start with it, at a `/`, `?` or the end); a URL an entry allows
is connected as any local one is. Over `crow acp` the editor is the user's own: nothing is guarded.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpcore2
import httpx2


@dataclass(frozen=True)
class ClientUrls:
    allowed: tuple[str, ...] = ()
    """--allow-client-url entries: hosts, host:port pairs and URL prefixes."""

    def allows(self, url: str) -> bool:
        """An operator's entry covers `url` (then its addresses are not checked)."""
        parts = urlsplit(url)
        try:
            host, port = (parts.hostname or "").lower(), parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:  # a port out of range: no entry allows it (and nothing connects to it)
            return False
        for entry in self.allowed:
            if "://" in entry:
                if url.startswith(entry) and (
                    entry.endswith("/") or url[len(entry) : len(entry) + 1] in ("", "/", "?")
                ):
                    return True
            elif entry.lower().strip("[]") == host or _host_port(entry) == (host, port):
                return True
        return False


def _host_port(entry: str) -> tuple[str, int] | None:
    host, _, port = entry.rpartition(":")
    return (host.lower().strip("[]"), int(port)) if host and port.isdigit() else None


def forbidden(address: str) -> str | None:
    """Why a client's server may not be reached at `address`, or None for a global unicast address."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    for kind in ("loopback", "link_local", "private", "unspecified", "multicast", "reserved"):
        if getattr(ip, f"is_{kind}"):
            return kind.replace("_", "-")
    return None if ip.is_global else "not global"


class GuardedBackend(httpcore2.AsyncNetworkBackend):
    """httpcore2's network backend, resolving and checking each name before it connects to the address."""

    def __init__(self) -> None:
        self._inner = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        with anyio.fail_after(timeout):
            infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        for address in addresses:
            if why := forbidden(address):
                raise httpcore2.ConnectError(
                    f"refused: {host} is {address}, a {why} address; a crow serve client's MCP server must be "
                    "public, unless the operator allows it (--allow-client-url)"
                )
        return await self._inner.connect_tcp(
            addresses[0], port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )

    async def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> Any:
        raise httpcore2.ConnectError("refused: a client's MCP server is reached over TCP only")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class GuardedTransport(httpx2.AsyncBaseTransport):
    """Requests the operator allowed go as usual; every other one through the GuardedBackend."""

    def __init__(self, urls: ClientUrls, inner: httpx2.AsyncBaseTransport, guarded: httpx2.AsyncBaseTransport):
        self.urls, self._inner, self._guarded = urls, inner, guarded

    @classmethod
    def build(cls, urls: ClientUrls, inner: httpx2.AsyncBaseTransport) -> GuardedTransport:
        guarded = httpx2.AsyncHTTPTransport(trust_env=False)
        # httpx2 takes no network backend: its pool is rebuilt with one (httpcore2's documented seam).
        guarded._pool = httpcore2.AsyncConnectionPool(
            ssl_context=guarded._pool._ssl_context,
            network_backend=GuardedBackend(),
        )
        return cls(urls, inner, guarded)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        transport = self._inner if self.urls.allows(str(request.url)) else self._guarded
        return await transport.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()
        await self._guarded.aclose()


_ACTIVE: ClientUrls | None = None
"""Set by `crow serve` (crow_acp.web.run): every editor-named HTTP/SSE server of this process is guarded."""


def guard_client_urls(urls: ClientUrls | None) -> None:
    global _ACTIVE
    _ACTIVE = urls


def active() -> ClientUrls | None:
    return _ACTIVE
