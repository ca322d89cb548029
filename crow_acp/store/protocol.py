"""The session store's typed interface, its records, and who owns a session (the lease).

Writes are synchronous and never block: `Session.record` and `SessionAccess.add_message` are called
from synchronous code (the loop, hooks, compaction, users' callbacks) and must stay so. A store
applies them in the order they were made, on its own thread, and `flush()` waits until all of them
are durable. Reads and lease changes are coroutines, so a network database never blocks the event
loop. See crow_acp/store/__init__.py for why.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from ..errors import StoreError
from ..history import StoredMessage

LOCAL_USER = "default"
"""The user of `crow acp`, `crow run` and the single-token `crow serve`; the owner of sessions from before owners."""

Access = Literal["read", "full"]
"""What a user may do with a session: read (load, resume, fork) or full (prompt, delete, set options too)."""


@dataclass
class SessionRecord:
    id: str
    cwd: str
    title: str | None
    created_at: float
    updated_at: float
    data: dict[str, Any]
    """additional_directories, mcp_servers, context, allowed (remembered answers), agent name."""
    owner: str = LOCAL_USER
    """The user the session belongs to (a `crow serve --users` name); not the lease holder (`Owner`)."""


@dataclass(frozen=True)
class Caller:
    """Who asks the store about sessions: a user, and whether they are an admin (who sees every session)."""

    user: str = LOCAL_USER
    admin: bool = False


@dataclass(frozen=True)
class Grant:
    """What `Caller` may do with one session, and whose it is."""

    owner: str
    access: Access


@dataclass(frozen=True)
class Lease:
    """One live lease row: who writes the session, and until when (seconds on the database's clock)."""

    session_id: str
    host: str
    pid: int
    expires_in: float


@dataclass(frozen=True)
class StoreState:
    schema_version: int
    leases: list[Lease]
    """Live leases only (not expired), soonest to expire first."""


@dataclass(frozen=True)
class Owner:
    """A crow process that may write sessions: the lease holder."""

    host: str
    pid: int
    started: str
    """The process's start time (from /proc), so a reused pid is not taken for the owner."""
    token: str
    """Unique per store instance: two stores in one process are two owners."""

    @classmethod
    def this_process(cls) -> Owner:
        # CROW_HOST_ID: for hosts that share a name (containers), so a peer is not taken for a local process.
        host = os.environ.get("CROW_HOST_ID") or socket.gethostname()
        return cls(host, os.getpid(), process_started(os.getpid()) or "", uuid.uuid4().hex)

    def visibly_gone(self, host: str) -> bool:
        """True when this owner ran on `host` (ours) and that process no longer runs."""
        if self.host != host:
            return False  # another machine: only the lease's expiry can tell
        started = process_started(self.pid)
        return started is None or (bool(self.started) and started != self.started)


def process_started(pid: int) -> str | None:
    """The start time of process `pid` in clock ticks since boot, or None if it is not running."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            # The command name (field 2) may hold spaces and parentheses: count from the last ")".
            return stat.read().rsplit(b")", 1)[1].split()[19].decode()
    except FileNotFoundError:
        return None
    except OSError:  # no /proc (macOS): the pid alone, which cannot tell a reused pid apart
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return ""


class SessionBusy(StoreError):
    """Another live crow process writes this session."""

    def __init__(self, session_id: str, host: str, pid: int, expires_in: float) -> None:
        self.session_id, self.host, self.pid, self.expires_in = session_id, host, pid, expires_in
        super().__init__(
            f"Session {session_id} is open in another crow process (pid {pid} on {host}). "
            f"Close it there first; if that process died, the session frees within {max(expires_in, 0):.0f} s."
        )


class LeaseLost(StoreError):
    """A write was refused: another crow process owns the session now (this one stalled past its lease).

    Nothing of the refused write, nor any later write of the session by this store, is applied until
    this store acquires the session again; `flush(session_id)` raises it until then.
    """

    def __init__(self, session_id: str, host: str = "", pid: int = 0) -> None:
        self.session_id, self.host, self.pid = session_id, host, pid
        holder = f" (pid {pid} on {host})" if host else ""
        super().__init__(
            f"Session {session_id} is now owned by another crow process{holder}: this one lost its lease while it "
            "was stalled, and wrote nothing more to it. Load the session again to continue it here."
        )


@runtime_checkable
class SessionStore(Protocol):
    """Where sessions live. Writes return at once and apply in call order; reads are awaited."""

    owner: Owner
    lease_ttl: float
    """Seconds a lease lasts without renewal."""

    # Writes (non-blocking, ordered)
    def create(self, record: SessionRecord, entries: Sequence[StoredMessage] = ()) -> None:
        """Store a new session, with `entries` as its history (a fork), in one transaction."""

    def append(self, session_id: str, entry: StoredMessage) -> None:
        """Store `entry` (its row_id already set) after every entry stored so far."""

    def update(self, session_id: str, *, title: str | None = None, data: dict[str, Any] | None = None) -> None: ...
    def update_message(
        self,
        session_id: str,
        row_id: int,
        *,
        message: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None: ...
    def move_first(self, session_id: str, row_id: int) -> None:
        """Order the entry before every other entry of its session (the system prompt)."""

    def compact(self, session_id: str, archived: list[int], appended: list[StoredMessage]) -> None:
        """Archive `archived` and append `appended` in one transaction: all or nothing."""

    def delete_rows(self, session_id: str, row_ids: list[int]) -> None:
        """Delete these entries of the session in one transaction (a rewind: the tail, kept in a fork)."""

    # Reads and waits
    async def flush(self, session_id: str | None = None) -> None:
        """Return once every write made so far is durable; raise if one failed. With a session id, raise
        LeaseLost if a write of that session was refused because another owner holds its lease."""

    async def get(self, session_id: str) -> SessionRecord | None: ...
    async def list_sessions(
        self, cwd: str | None = None, limit: int | None = None, *, visible_to: Caller | None = None
    ) -> list[SessionRecord]:
        """Sessions that got at least one prompt, most recently updated first (at most `limit`); with
        `visible_to`, only that user's and those shared with them (every one for an admin)."""

    async def find_prefix(
        self, prefix: str, limit: int = 10, *, visible_to: Caller | None = None
    ) -> list[SessionRecord]:
        """Prompted sessions whose id starts with `prefix`, most recently updated first (at most `limit`);
        `visible_to` as for list_sessions."""

    # Ownership
    async def access(self, session_id: str, caller: Caller) -> Grant | None:
        """What `caller` may do with the session: full for its owner and an admin, the shared access for a
        user it is shared with; None when the session does not exist or is not theirs to see (one answer)."""

    async def share(self, session_id: str, user: str, access: Access | None) -> None:
        """Give `user` read or full access to the session (None: take it back). Not fenced by the lease:
        the owner's `crow sessions share` may run while the session is open elsewhere."""

    async def shares(self, session_id: str) -> dict[str, Access]:
        """The users the session is shared with, and their access."""

    async def load(self, session_id: str) -> list[StoredMessage]:
        """Every entry, archived ones too, in history order."""

    # Leases: one writer per session across processes and machines
    async def acquire(self, session_id: str) -> None:
        """Take the session's lease, or raise SessionBusy if a live owner holds it. From then on every
        write of the session applies only while the lease still holds this owner's token (fencing)."""

    async def release(self, session_id: str) -> None: ...
    async def delete(self, session_id: str) -> None:
        """Delete the session, its whole history and its lease at once, and its forks' link to it
        (`forked_from`); SessionBusy if a live owner holds it. An unknown session is no error."""

    async def renew(self, skip: frozenset[str] = frozenset()) -> list[str]:
        """Extend every lease this owner holds but those in `skip` (left to run out); returns the sessions
        whose lease it lost."""

    async def ping(self) -> None:
        """Raise StoreError if the store cannot be reached."""

    async def state(self) -> StoreState:
        """The schema version and the live leases, for `crow check`."""

    async def close(self) -> None: ...


class Db(Protocol):
    """One connection as a worker thread uses it."""

    lock_rows: str
    """What makes a SELECT lock the rows it reads until the transaction ends ("" where writes serialize anyway)."""
    dml_in_cte: bool
    """Whether a WITH clause may hold an INSERT (PostgreSQL): an append is then a single statement."""
    lock_session: str
    """A statement that serializes transactions touching one session's lease ("" where writes serialize anyway)."""

    def execute(self, sql: str, args: Iterable[Any] = ()) -> Any: ...
    def transaction(self) -> AbstractContextManager[Any]: ...
    def now(self) -> float:
        """The clock leases are measured against: the database server's, so machines' clocks may differ."""
