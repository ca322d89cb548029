"""A store as a session shared read-only sees it: every read the store's, every write kept from it.

A user a session is shared with read-only may load it (and fork it) but not change it. Loading a
session still runs what any load runs: its rows repaired, the editor's roots and system prompt taken,
begin_session's hooks (which may record a system prompt), a mode set on a session from before modes.
All of that stays in the reader's memory; the owner's stored session, and its lease, are never touched,
so a reader neither changes the conversation nor takes it away from the owner's open connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..history import StoredMessage
from .protocol import Access, Caller, Grant, SessionRecord, SessionStore, StoreState


class ReadOnlyStore(SessionStore):
    def __init__(self, store: SessionStore) -> None:
        self._store = store
        self.owner = store.owner
        self.lease_ttl = store.lease_ttl

    # Writes: kept from the store (the reader's session holds them in memory only)
    def create(self, record: SessionRecord, entries: Sequence[StoredMessage] = ()) -> None:
        pass

    def append(self, session_id: str, entry: StoredMessage) -> None:
        pass

    def update(self, session_id: str, *, title: str | None = None, data: dict[str, Any] | None = None) -> None:
        pass

    def update_message(
        self,
        session_id: str,
        row_id: int,
        *,
        message: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        pass

    def move_first(self, session_id: str, row_id: int) -> None:
        pass

    def compact(self, session_id: str, archived: list[int], appended: list[StoredMessage]) -> None:
        pass

    def delete_rows(self, session_id: str, row_ids: list[int]) -> None:
        pass

    async def flush(self, session_id: str | None = None) -> None:
        pass  # nothing of the reader's was written, so nothing is waited for

    # Reads: the store's
    async def get(self, session_id: str) -> SessionRecord | None:
        return await self._store.get(session_id)

    async def list_sessions(
        self, cwd: str | None = None, limit: int | None = None, *, visible_to: Caller | None = None
    ) -> list[SessionRecord]:
        return await self._store.list_sessions(cwd, limit, visible_to=visible_to)

    async def find_prefix(
        self, prefix: str, limit: int = 10, *, visible_to: Caller | None = None
    ) -> list[SessionRecord]:
        return await self._store.find_prefix(prefix, limit, visible_to=visible_to)

    async def access(self, session_id: str, caller: Caller) -> Grant | None:
        return await self._store.access(session_id, caller)

    async def share(self, session_id: str, user: str, access: Access | None) -> None:
        raise PermissionError(f"session {session_id} is shared read-only: it cannot be shared from here")

    async def shares(self, session_id: str) -> dict[str, Access]:
        return await self._store.shares(session_id)

    async def load(self, session_id: str) -> list[StoredMessage]:
        return await self._store.load(session_id)

    # Leases: the owner's to hold; a reader takes none
    async def acquire(self, session_id: str) -> None:
        pass

    async def release(self, session_id: str) -> None:
        pass

    async def delete(self, session_id: str) -> None:
        raise PermissionError(f"session {session_id} is shared read-only: it cannot be deleted from here")

    async def renew(self, skip: frozenset[str] = frozenset()) -> list[str]:
        return []

    async def ping(self) -> None:
        await self._store.ping()

    async def state(self) -> StoreState:
        return await self._store.state()

    async def close(self) -> None:
        pass  # the store is the agent's: it closes it
