"""Sockets before the app sees them: headers arrive in time, and accepting never runs out of descriptors.

uvicorn (0.54) offers neither. Its keep-alive timeout runs only between requests and stops at the
first byte of the next one, and nothing times a new connection's first request: a client that sends
half a request line holds its socket for as long as it likes, before any token is checked. Its
`limit_concurrency` answers 503 after the headers, on sockets already accepted, so a flood of such
clients still reaches the process's file limit, after which `accept` fails with EMFILE and nobody,
`/health` included, gets in. So crow's HTTP protocol (uvicorn's h11 one) adds:

- a header timeout: from connect, and again after each response, a request's headers must be complete
  within HEADER_TIMEOUT seconds or the socket is closed;
- a socket budget under RLIMIT_NOFILE: over it, a new connection closes the oldest one still waiting
  for its headers (a slow client, not a working one), or itself if every one is working. Accepts come
  in bursts of at most `backlog`, which the budget leaves room for.
"""

from __future__ import annotations

import asyncio
import resource
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT = 10.0
"""Seconds a client has to send a request's headers, from connect or from the end of the last response."""


def socket_budget() -> tuple[int, int]:
    """(client sockets at once, accept burst): half the soft file limit goes to clients, the other half
    to the store, MCP servers, commands and logs."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    half = max(soft // 2, 16) if soft != resource.RLIM_INFINITY else 32768
    backlog = max(min(128, half // 8), 1)
    return half - backlog, backlog


def guarded_protocol(header_timeout: float, max_sockets: int) -> type[H11Protocol]:
    return type("CrowH11Protocol", (GuardedH11,), {"header_timeout": header_timeout, "max_sockets": max_sockets})


class GuardedH11(H11Protocol):
    header_timeout = HEADER_TIMEOUT
    max_sockets = 1024

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._waiting: asyncio.TimerHandle | None = None
        self._since = self.loop.time()
        if len(self.connections) > self.max_sockets:
            slowest = _oldest_waiting(self.connections, self)
            (slowest or self).transport.close()
        if not self.transport.is_closing():
            self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the headers are in (or the socket is upgraded)
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    @property
    def waiting_for_headers(self) -> bool:
        return self._waiting is not None

    def _arm(self) -> None:
        self._disarm()
        self._since = self.loop.time()
        self._waiting = self.loop.call_later(self.header_timeout, self._too_slow)

    def _disarm(self) -> None:
        if self._waiting is not None:
            self._waiting.cancel()
            self._waiting = None

    def _too_slow(self) -> None:
        self._waiting = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def _oldest_waiting(connections: set[Any], new: GuardedH11) -> GuardedH11 | None:
    waiting = [
        c
        for c in connections
        if isinstance(c, GuardedH11) and c is not new and c.waiting_for_headers and not c.transport.is_closing()
    ]
    return min(waiting, key=lambda c: c._since, default=None)
