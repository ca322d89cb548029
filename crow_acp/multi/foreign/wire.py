"""The wire to a foreign member: hostile bytes end the link, updates are taken one at a time.

A member is untrusted. Its stdout goes through the same hardened reader as the editor's stdin
(acp/rpc/wire.py: lines read in bounded pieces, an oversized one refused, invalid UTF-8 and lone
surrogates repaired), but where crow answers an editor's malformed line, a member's ends the link:
the turn fails with the reason, and the graph goes on as for any failing member.

Its session/update notifications never reach the SDK's dispatcher (which starts one task per
notification, without bound): UpdateGate hands each one to crow and reads the next only when crow
has dealt with it, so a flood waits in the member's pipe, not in crow's memory.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ...acp.rpc.wire import StdioTransport
from ...errors import WireError

log = logging.getLogger(__name__)

UpdateHandler = Callable[[Any], Awaitable[None]]


class StrictWire(StdioTransport):
    """StdioTransport for a member's stdout: a line that is not a JSON-RPC message ends the link."""

    broken: str | None = None
    """Why the link was ended, once a bad line arrived."""

    async def receive(self) -> dict[str, Any] | None:
        return None if self.broken is not None else await super().receive()

    async def _refused(self, exc: WireError, size: int) -> bool:
        self.broken = f"malformed JSON-RPC: {exc.message}"
        log.warning("member wire: %s (%d bytes)", self.broken, size)
        return False


class UpdateGate:
    """A Transport around another: session/update notifications go to `on_update`, in order, one at a time."""

    def __init__(self, inner: Any, on_update: UpdateHandler) -> None:
        self.inner = inner
        self._on_update = on_update

    async def send(self, message: dict[str, Any]) -> None:
        await self.inner.send(message)

    async def receive(self) -> dict[str, Any] | None:
        while (message := await self.inner.receive()) is not None:
            if message.get("method") == "session/update" and "id" not in message:
                await self._on_update(message.get("params"))
                continue
            return message
        return None

    async def close(self) -> None:
        await self.inner.close()
