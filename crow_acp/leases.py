"""The sessions an agent has open stay leased to it in the store: one writer per session.

Another crow process (a second editor window, a second `crow serve` machine) that opens a session
held by a live owner gets a clear error, not a replay: crow chose an error over a read-only view
so that an editor never shows a history that silently stops updating. An owner that died frees its
sessions at once on the same machine, or when the lease expires from another machine.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable

from acp import RequestError

from .store import SessionBusy, SessionStore

log = logging.getLogger(__name__)

SESSION_BUSY = -32001
"""JSON-RPC error code (server-defined range) for "another crow process writes this session"."""


class Leases:
    def __init__(self, store: Callable[[], SessionStore], lost: Callable[[str], Awaitable[None]]) -> None:
        self._store = store
        self._lost = lost
        self._renewing: asyncio.Task[None] | None = None

    async def take(self, session_id: str) -> None:
        """Lease the session to this agent, or raise the error the editor shows."""
        store = self._store()
        try:
            await store.acquire(session_id)
        except SessionBusy as busy:
            data = {"sessionId": session_id, "host": busy.host, "pid": busy.pid, "retryAfter": round(busy.expires_in, 1)}
            raise RequestError(SESSION_BUSY, str(busy), data) from None
        if self._renewing is None:
            self._renewing = asyncio.create_task(self._renew_forever(store), name="crow-lease-renewal")

    async def give_back(self, session_id: str) -> None:
        await self._store().release(session_id)

    async def close(self) -> None:
        if self._renewing is not None:
            self._renewing.cancel()
            self._renewing = None

    async def _renew_forever(self, store: SessionStore) -> None:
        while True:
            await asyncio.sleep(store.lease_ttl / 3)
            try:
                lost = await store.renew()
            except Exception as exc:  # the store's own error (a database restarting): try again next round
                log.warning("could not renew session leases: %s", exc)
                continue
            for session_id in lost:
                log.warning("session %s was taken over by another crow process; closing it here", session_id)
                await self._lost(session_id)
