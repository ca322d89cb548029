"""The reaper of `crow serve`: quiet connections rest their sessions' leases, and a connection quiet
for --idle-timeout is closed as a DELETE would close it (turns cancelled, MCP servers closed)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .connection import CrowConnection, CrowRegistry

log = logging.getLogger(__name__)


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
