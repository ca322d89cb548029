"""Who may talk to `crow serve` at all: the Host and Origin checks that keep web pages out.

A web page in the user's browser can reach a server on localhost: browsers apply no CORS to WebSockets,
and DNS rebinding points an attacker's name at 127.0.0.1, so the page's requests look same-origin to the
browser. Two headers give them away, and crow checks both on every HTTP request and WebSocket upgrade:

- `Host` must name this server: the bind address, a loopback name, an IP address (a rebinding page
  always sends its own DNS name, never an address), or a name the operator listed (`--allowed-host`);
- `Origin` is sent by browsers, never by editors or SDK clients: a request carrying one is refused
  unless the operator listed that origin (`--allowed-origin`).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


@dataclass(frozen=True)
class Gate:
    hosts: frozenset[str]
    """Host names (lower case, no port) that name this server, besides IP addresses."""
    origins: frozenset[str]
    """Origins (scheme://host[:port], lower case) whose browser pages may connect."""

    @classmethod
    def build(cls, bind: str, hosts: Iterable[str] = (), origins: Iterable[str] = ()) -> Gate:
        names = {bind.strip("[]").lower(), *LOOPBACK_NAMES, *(h.strip().lower() for h in hosts)}
        return cls(frozenset(names), frozenset(o.strip().rstrip("/").lower() for o in origins))

    def refusal(self, host: str | None, origin: str | None) -> str | None:
        """Why a request with these headers is refused, or None."""
        name = host_name(host or "")
        if name is None or not (name in self.hosts or _is_address(name)):
            return f"Host {host!r} is not this server's name (the operator can allow it with --allowed-host)"
        if origin is not None and origin.rstrip("/").lower() not in self.origins:
            return (
                f"Origin {origin!r} is not allowed: browser pages may not connect "
                "(the operator can allow one with --allowed-origin)"
            )
        return None


def host_name(header: str) -> str | None:
    """The name in a Host header, without its port, lower case; None if it is not a valid one."""
    header = header.strip().lower()
    if header.startswith("["):
        name, bracket, rest = header[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else rest
    else:
        name, _, port = header.partition(":")
        bracket = "]"
    if not name or not bracket or (port and not port.isdigit()):
        return None
    return name


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
