"""Whose sessions an agent's caller may touch: the seam between who is asking and the store's answer.

The caller is the agent's (`AcpAgent.act_for`): `crow serve` sets the connection's user on the agent it
builds for that connection; everywhere else (`crow acp`, `crow run`, Python) it is the local user
`default`, whose sessions every one before owners is. Each session handler asks `require` first:

- a session the caller may not see answers exactly as one that does not exist (resource_not_found, from
  the same one-row query), so neither its id nor its prefix tells B that A's session is there;
- a session shared read-only may be loaded, resumed and forked, but not prompted, deleted or configured.

Work done inside a turn acts for the session's owner (`ACTING_FOR`): what the turn creates (a MultiAgent's
member sessions, a delegate's helpers) belongs to the owner of the parent, and the helpers driven from
Python inside it may open them. An admin, or a user the session is shared with in full, prompting it does
not make those sessions theirs. A fork belongs to the owner of the session forked; a forker who is not
that owner gets full access to it (a share), so a reader's fork is theirs to continue.

A session's owner never changes, so each one the store names is remembered: its owner (or an admin)
asking again needs no query. Anyone else is asked of the store every time, so a share taken back holds
at once.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any

from acp import RequestError

from ...store import Access, Caller, Grant

if TYPE_CHECKING:
    from ...store import SessionStore

REMEMBERED = 10_000
"""Owners remembered per agent at most."""
ACTING_FOR: contextvars.ContextVar[Caller | None] = contextvars.ContextVar("crow_acting_for", default=None)
"""The owner of the session whose turn (or graph) is running: in-process work inside it acts for them."""


def read_only(session_id: str) -> RequestError:
    return RequestError.invalid_params(
        {"sessionId": f"session {session_id} is shared with you read-only: load or fork it, but not change it"}
    )


async def anyone(session_id: str) -> None:
    """Every stored session may be loaded (an agent that serves one user: SessionOpener's default)."""


class Ownership:
    def __init__(self, store: Callable[[], SessionStore]) -> None:
        self.store = store
        self.caller = Caller()
        """Who the agent serves (AcpAgent.act_for); the local user unless `crow serve` says otherwise."""
        self._owners: dict[str, str] = {}
        """Session id -> its owner, as the store answered."""

    def who(self) -> Caller:
        return ACTING_FOR.get() or self.caller

    async def grant(self, session_id: str) -> Grant | None:
        caller = self.who()
        owner = self._owners.get(session_id)
        if owner is not None and (caller.admin or caller.user == owner):
            return Grant(owner, "full")
        grant = await self.store().access(session_id, caller)
        if grant is not None:
            if len(self._owners) >= REMEMBERED:
                self._owners.clear()  # a long-lived server's agent: asking again is only a query
            self._owners[session_id] = grant.owner
        return grant

    async def require(self, session_id: str, need: Access) -> Grant:
        """The caller's grant on the session, or the error: not found (not theirs to see), or read-only."""
        grant = await self.grant(session_id)
        if grant is None:
            raise RequestError.resource_not_found(session_id)
        if need == "full" and grant.access != "full":
            raise read_only(session_id)
        return grant

    async def deletable(self, session_id: str) -> Grant | None:
        """None for a session the caller may not see (its delete answers as for an unknown id); raises for a
        read-only one."""
        grant = await self.grant(session_id)
        if grant is not None and grant.access != "full":
            raise read_only(session_id)
        self._owners.pop(session_id, None)  # it is about to go: a later id's answer is the store's
        return grant

    @asynccontextmanager
    async def as_owner_of(self, session_id: str, need: Access) -> AsyncIterator[Grant]:
        """`require`, then in-process work inside (a graph's members opened, its run) acting for the owner."""
        grant = await self.require(session_id, need)
        with self.acting_for_owner(grant):
            yield grant

    async def forked(self, fork_id: str, source: Grant) -> None:
        """A fork is its source owner's; a user who forked a session shared with them may continue it."""
        caller = self.who()
        self._owners[fork_id] = source.owner
        if not caller.admin and caller.user != source.owner:
            await self.store().share(fork_id, caller.user, "full")

    @contextmanager
    def acting_for_owner(self, grant: Grant) -> Iterator[None]:
        """In-process work (a turn, a graph's members) acting for the session's owner."""
        token = ACTING_FOR.set(Caller(grant.owner))
        try:
            yield
        finally:
            ACTING_FOR.reset(token)

    async def share(self, params: dict[str, Any]) -> dict[str, Any]:
        """`_crow/share` {sessionId, user, access: "read" | "full" | "none"}: the owner (or an admin) gives
        `user` that access to the session ("none" takes it back)."""
        session_id, user, access = _share_params(params)
        grant = await self.require(session_id, "read")
        caller = self.who()
        if not caller.admin and grant.owner != caller.user:
            raise RequestError.invalid_params({"sessionId": f"only the owner of session {session_id} may share it"})
        await self.store().share(session_id, user, None if access == "none" else access)
        return {"sessionId": session_id, "user": user, "access": access}


USER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""As `crow serve --users` names users (web/users.py)."""


def _share_params(params: dict[str, Any]) -> tuple[str, str, Any]:
    session_id, user, access = params.get("sessionId"), params.get("user"), params.get("access")
    if not isinstance(session_id, str) or not session_id:
        raise RequestError.invalid_params({"sessionId": "a session id is required"})
    if not isinstance(user, str) or not USER_NAME.fullmatch(user):
        raise RequestError.invalid_params({"user": "a user name: letters, digits, '_', '.', '-' (at most 64)"})
    if access not in ("read", "full", "none"):
        raise RequestError.invalid_params({"access": 'one of "read", "full", "none"'})
    return session_id, user, access
