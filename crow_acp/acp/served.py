"""Who an AcpAgent serves, what that changes (session/list, session/delete), and the extension that shares
a session: a base of AcpAgent (agent.py).

`act_for` is the declared seam between a transport that knows who is asking and the agent's session
handlers: `crow serve` calls it with the connection's user when it builds that connection's agent
(web/connection.py); `crow acp` and `crow run` never do, so their caller stays the local user `default`.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from acp import RequestError
from acp.schema import DeleteSessionResponse, ListSessionsResponse

from ..store import Caller
from .prompt.steering import METHOD as STEERING
from .prompt.steering import Steering
from .sessions.ownership import Ownership
from .sessions.stored import listed

if TYPE_CHECKING:
    from .sessions.leases import Leases
    from .sessions.opener import SessionOpener
    from .sessions.registry import OpenSessions

SHARE, REWIND = "crow/share", "crow/rewind"
"""`_crow/share` and `_crow/rewind` as the SDK hands them over (without their leading underscore)."""


class Extension(Protocol):
    """A "_" method's handler (`_crow/*`, `_session/steering`): its params in, its result out."""

    async def __call__(self, params: dict[str, Any]) -> dict[str, Any]: ...


class ServedToUsers:
    name: str
    ownership: Ownership
    extensions: dict[str, Extension]
    """The "_" methods by name without the leading `_` (`crow/share`), each advertised in rpc/capabilities.py."""
    open_sessions: OpenSessions
    leases: Leases
    opener: SessionOpener

    prompt: Callable[..., Coroutine[Any, Any, Any]]
    _spawn: Callable[[Coroutine[Any, Any, Any]], None]

    def served_extensions(self) -> dict[str, Extension]:
        """The "_" requests this agent serves; ext_method checks the caller's access to the session first."""
        steer = Steering(self.opener.live, self.prompt, self._spawn).steer
        return {SHARE: self.ownership.share, REWIND: self.opener.rewinds.request, STEERING: steer}

    def act_for(self, caller: Caller) -> None:
        """Serve `caller`: their sessions, those shared with them, every one for an admin."""
        self.ownership.caller = caller

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """A "_" method of `extensions` (any other is unknown). One naming a session answers as for an unknown
        session unless the caller may change it; `_crow/share` has its own rule (the owner's, ownership.py)."""
        handler = self.extensions.get(method)
        if handler is None:
            raise RequestError.method_not_found(f"_{method}")
        if method != SHARE and isinstance(session_id := params.get("sessionId"), str):
            await self.ownership.require(session_id, "full")
        return await handler(params)

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **_: Any) -> ListSessionsResponse:
        """The caller's sessions of this agent, and those shared with them (every one for an admin)."""
        return ListSessionsResponse(sessions=await listed(self.ownership.store(), cwd, self.name, self.ownership.who()))

    async def delete_session(self, session_id: str, **_: Any) -> DeleteSessionResponse:
        """Close the session here (a running turn cancelled first), then remove it from the store; one open in
        another crow process is refused with that process named; an unknown one (or another user's) is no error."""
        if await self.ownership.deletable(session_id) is None:
            return DeleteSessionResponse()
        await self.open_sessions.release(session_id, "closed")
        await self.leases.delete(session_id)
        self.open_sessions.forget_source(session_id)
        self.opener.checkpoints.delete(session_id)  # its file checkpoints go with it
        return DeleteSessionResponse()
