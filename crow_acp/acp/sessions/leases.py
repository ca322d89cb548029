"""The sessions an agent has open stay leased to it in the store: one writer per session.

Another crow process (a second editor window, a second `crow serve` machine) that opens a session
held by a live owner gets a clear error, not a replay: crow chose an error over a read-only view
so that an editor never shows a history that silently stops updating. An owner that died frees its
sessions at once on the same machine, or when the lease expires from another machine.

An owner that stalled past its lease (SIGSTOP, a laptop asleep) and was taken over is fenced by the
store: its writes are refused (LeaseLost). Here that ends its running turn with a clear error, closes
the session in this process, and answers later prompts to it with the same error until it is loaded
again; nothing it still held in memory reaches the store or the editor.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from acp import RequestError

from ...events import NoticeRaised
from ...store import LeaseLost, SessionBusy, SessionStore
from ..updates.warnings import taken_over

if TYPE_CHECKING:
    from ...core.session import Session

log = logging.getLogger(__name__)

SESSION_BUSY = -32001
"""JSON-RPC error code (server-defined range) for "another crow process writes this session"."""

Closer = Callable[[str], Coroutine[Any, Any, None]]

_OPEN: weakref.WeakKeyDictionary[SessionStore, dict[str, Leases]] = weakref.WeakKeyDictionary()
"""Per store: which agent of this process has each session open. Agents sharing a store (one per
connection under `crow serve`) share its lease owner, so the lease alone cannot keep them apart."""


_RENEWING: weakref.WeakKeyDictionary[SessionStore, asyncio.Task[None]] = weakref.WeakKeyDictionary()


class Leases:
    """One agent's view: take a session's lease when it opens, give it back when it closes."""

    def __init__(self, store: Callable[[], SessionStore], lost: Closer, close: Closer) -> None:
        self._store = store
        self._lost = lost
        self._close = close
        self.taken_over: dict[str, LeaseLost] = {}
        """Sessions another process took over from this agent, until loaded again: their prompts get the error."""
        self.dormant = False
        """Its client is gone for now (`crow serve`: no request, no stream): its sessions' leases are not
        renewed, so another process may take them over once they expire (lease_ttl), as if this one died."""
        self._closing: set[asyncio.Task[Any]] = set()
        self._told: dict[str, asyncio.Task[None]] = {}
        """The notice of each session taken over, sent before any error that names it (test_notices.py)."""
        self.warn: Callable[[NoticeRaised], Awaitable[None]] | None = None
        """Where the user is told that a session was taken over (the Outbox sets it)."""

    async def take(self, session_id: str) -> None:
        """Lease the session to this agent, or raise the error the editor shows.

        If another agent in this process has it open (another connection), that agent closes it
        first: its running turn is cancelled and records what it did, then this one goes on.
        """
        store = self._store()
        open_here = _OPEN.setdefault(store, {})
        while (other := open_here.get(session_id)) not in (None, self):
            await other._close(session_id)  # gives it back, so the loop ends
            if open_here.get(session_id) is other:
                open_here.pop(session_id)
        try:
            await store.acquire(session_id)
        except SessionBusy as busy:
            raise busy_error(busy) from None
        open_here[session_id] = self
        self.taken_over.pop(session_id, None)
        self._told.pop(session_id, None)
        if store not in _RENEWING or _RENEWING[store].done():
            _RENEWING[store] = asyncio.create_task(_renew_forever(store), name="crow-lease-renewal")

    async def delete(self, session_id: str) -> None:
        """Remove the session from the store for good: taken first (closed in any other agent of this
        process, or refused with the error naming the process that has it), then deleted with its history,
        its lease and its forks' link to it. The caller closed it here."""
        await self.take(session_id)
        store = self._store()
        try:
            await store.delete(session_id)
        except SessionBusy as busy:  # taken over between the two: this process stalled
            raise busy_error(busy) from None
        finally:
            if _OPEN.get(store, {}).get(session_id) is self:
                del _OPEN[store][session_id]
        self.taken_over.pop(session_id, None)
        self._told.pop(session_id, None)

    async def refuse_if_taken_over(self, session_id: str) -> None:
        """Before a prompt: a session another process took over from this one is not run here."""
        if (lost := self.taken_over.get(session_id)) is not None:
            await self._told_first(session_id)
            raise taken_over_error(lost)

    async def _told_first(self, session_id: str) -> None:
        """The editor hears the notice before the error answer, not in whichever order the tasks run."""
        if (told := self._told.get(session_id)) is not None:
            await asyncio.shield(told)

    async def flushed(self, session_id: str) -> bool:
        """Before an event reaches the editor: its writes are durable (True), or its lease was lost (False:
        the event is dropped, the turn is stopped and the session closed here)."""
        try:
            await self._store().flush(session_id)
        except LeaseLost as lost:
            self.lose(lost)
            return False
        return session_id not in self.taken_over

    async def durable(self, session: Session, turn: Awaitable[str]) -> str:
        """Run a prompt's turn; at its end its writes are durable, or the prompt fails with the
        taken-over error (over any error the lost lease caused)."""
        try:
            stop = await turn
        except RequestError:
            await self._durable(session)
            raise
        await self._durable(session)
        return stop

    async def _durable(self, session: Session) -> None:
        try:
            await session.store.flush(session.id)
        except LeaseLost as refused:
            self.lose(refused)
        if (lost := self.taken_over.get(session.id)) is not None:
            await self._told_first(session.id)
            raise taken_over_error(lost)

    def lose(self, lost: LeaseLost) -> None:
        """Another process owns the session now: stop its turn and close it here, in the background (the
        close waits for the turn to wind down). The store logged it."""
        if lost.session_id in self.taken_over:
            return
        self.taken_over[lost.session_id] = lost
        self._told[lost.session_id] = asyncio.create_task(self._tell(lost))
        task = asyncio.create_task(self._taken_over(lost))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _tell(self, lost: LeaseLost) -> None:
        if self.warn is not None:
            await self.warn(taken_over(lost.session_id, str(lost)))

    async def _taken_over(self, lost: LeaseLost) -> None:
        await asyncio.shield(self._told[lost.session_id])
        await self._lost(lost.session_id)

    async def give_back(self, session_id: str) -> None:
        store = self._store()
        open_here = _OPEN.get(store, {})
        if open_here.get(session_id) is self:
            del open_here[session_id]
            await store.release(session_id)

    async def close(self) -> None:
        """Stop renewing once no agent of this process holds a session of the store."""
        store = self._store()
        if not _OPEN.get(store) and (task := _RENEWING.pop(store, None)):
            task.cancel()


async def _renew_forever(store: SessionStore) -> None:
    """One renewal loop per store, however many agents share it."""
    while True:
        await asyncio.sleep(store.lease_ttl / 3)
        try:
            dormant = frozenset(sid for sid, holder in _OPEN.get(store, {}).items() if holder.dormant)
            lost = await store.renew(dormant)
        except RuntimeError:
            return  # the store was closed
        except Exception as exc:  # the store's own error (a database restarting): try again next round
            log.warning("could not renew session leases: %s", exc)
            continue
        for session_id in lost:  # the store logged it
            if holder := _OPEN.get(store, {}).pop(session_id, None):
                holder.lose(LeaseLost(session_id))


def held(store: SessionStore) -> int:
    """How many sessions of `store` this process holds the lease of (`crow serve`'s leases gauge)."""
    return len(_OPEN.get(store, {}))


def busy_error(busy: SessionBusy) -> RequestError:
    data = {"sessionId": busy.session_id, "host": busy.host, "pid": busy.pid, "retryAfter": round(busy.expires_in, 1)}
    return RequestError(SESSION_BUSY, str(busy), data)


def taken_over_error(lost: LeaseLost) -> RequestError:
    data = {"sessionId": lost.session_id, "host": lost.host, "pid": lost.pid, "takenOver": True}
    return RequestError(SESSION_BUSY, str(lost), data)
