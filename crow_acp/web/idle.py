"""Connections whose client is gone: their leases run out, then they are closed as a DELETE closes them.

An HTTP client that dies (killed, a laptop closed, a crash) sends no DELETE: its connection, agent,
sessions, MCP servers and leases would live as long as the server, and `--max-connections` of them
lock everyone out. A connection is busy while one of its HTTP requests or streams is open (a WebSocket
is one long stream, and ends when its socket does). Once it is not:

- its agent's leases are no longer renewed, so another server can load its sessions once they expire
  (`lease_ttl`); renewal resumes if the client comes back before anyone took them;
- after `--idle-timeout` seconds it is closed like a DELETE: turns cancelled, MCP servers closed,
  leases released.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .connection import CrowConnection, CrowRegistry

log = logging.getLogger(__name__)


class Activity:
    """How many of a connection's requests and streams are open, and since when none is."""

    def __init__(self) -> None:
        self.open = 0
        self.quiet_since = time.monotonic()

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        self.open += 1
        try:
            yield
        finally:
            self.open -= 1
            self.quiet_since = time.monotonic()

    def idle_for(self, now: float) -> float:
        return 0.0 if self.open else now - self.quiet_since


async def reap_forever(registry: CrowRegistry, idle_timeout: float) -> None:
    """Every second or so: rest the leases of quiet connections, close those quiet for `idle_timeout`."""
    tick = min(1.0, idle_timeout / 4)
    while True:
        await asyncio.sleep(tick)
        now = time.monotonic()
        for connection in registry.connections:
            idle = connection.activity.idle_for(now)
            _rest_leases(connection, dormant=idle > 0)
            if idle >= idle_timeout:
                log.info("closing connection %s: no request or stream for %.0f s", connection.connection_id, idle)
                await registry.remove(connection.connection_id)


def _rest_leases(connection: CrowConnection, *, dormant: bool) -> None:
    for leases in _leases_of(connection.agent):
        leases.dormant = dormant


def _leases_of(agent: Any) -> list[Any]:
    from ..acp.agent import AcpAgent
    from ..multi import MultiAgent

    if isinstance(agent, MultiAgent):
        return [member.leases for member in agent.members]
    return [agent.leases] if isinstance(agent, AcpAgent) else []
