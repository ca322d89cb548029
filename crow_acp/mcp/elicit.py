"""An MCP server's elicitation (a question for the user in the middle of a tool call), as crow's client sees it.

Crow tells every server it can elicit (form and URL): whether the editor can show the question is
decided per question, by the Elicitor the session gives its servers (acp/questions/elicitation.py), which
asks the editor or declines on the user's behalf. The question belongs to a tool call: each call
to a server runs inside a CallScope, the seam that tells the Elicitor which call waits, and that
carries back what the model must be told. At MCP 2026-07-28 the questions come back as the call's
own result (InputRequiredResult), and the client asks them inside the call's task: `current_call`,
set for that task, names the call exactly. An older server's question is a request of its own on
the wire that does not say which call it belongs to: with one call in flight it is that one; with
several, the question is scoped to the session. A call that ends (done, cancelled, timed out)
cancels its open questions.

A call has one question open at a time, and asks at most MAX_PER_CALL in all (a server's call that
asked 300 at once put 300 dialogs before the user); a question without a call, one per server at a
time. The others are declined on the user's behalf, and the model is told.
"""

from __future__ import annotations

import asyncio
import logging
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..plugin.session import ToolTimer

log = logging.getLogger(__name__)

MAX_PER_CALL = 8


@dataclass(eq=False)
class CallScope:
    """One tool call to an MCP server, while it runs."""

    call_id: str | None
    """The ACP tool call id that waits for the server (None: a call outside a tool call, e.g. a prompt)."""
    notes: list[str] = field(default_factory=list)
    """What the model must know about the call's questions (declined for the user, an answer refused...)."""
    questions: set[asyncio.Task[Any]] = field(default_factory=set)
    """The call's open questions: cancelled when the call ends."""
    timer: ToolTimer = field(default_factory=ToolTimer)
    """The loop's limit on the call, paused while the user answers (timeouts.elicitation bounds that)."""
    asked: int = 0
    """Questions the call has put to the user so far."""

    def close(self) -> None:
        for question in self.questions:
            question.cancel()


current_call: ContextVar[CallScope | None] = ContextVar("current_call", default=None)
"""The call the running task makes (McpServer.call sets it; the task answering the call inherits it)."""


class Elicitor(Protocol):
    """Asks the user a server's question; answers with an MCP ElicitResult (never raises but on cancel)."""

    async def elicit(self, server: str, params: Any, scope: CallScope | None) -> Any: ...

    async def completed(self, server: str, elicitation_id: str) -> None:
        """The server says a URL-mode question is done (notifications/elicitation/complete)."""


class Elicitations:
    """One server's side: its calls in flight, and the callback the MCP client calls for its questions."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.elicitor: Elicitor | None = None
        self.in_flight: list[CallScope] = []
        self._unscoped: asyncio.Future[Any] | None = None

    def _over_bound(self, scope: CallScope | None) -> str | None:
        """Why one more question of this server may not reach the user now, or None."""
        asked = f"The MCP server {self.server!r} asked another question"
        if scope is None:
            return f"{asked} while one was open; crow declined it." if self._unscoped is not None else None
        if scope.questions:
            return f"{asked} while one of this call was open; crow declined it (one at a time)."
        if scope.asked >= MAX_PER_CALL:
            return f"{asked} after {MAX_PER_CALL} in this call; crow declined it."
        return None

    async def callback(self, context: Any, params: Any) -> Any:
        """The MCP client's elicitation_callback: the question runs as a task the waiting call can cancel."""
        from mcp.types import ElicitResult

        scope = current_call.get() or (self.in_flight[0] if len(self.in_flight) == 1 else None)
        if self.elicitor is None:
            return ElicitResult(action="decline")
        if (why := self._over_bound(scope)) is not None:
            log.warning("MCP server %r: %s", self.server, why)
            if scope is not None and why not in scope.notes:
                scope.notes.append(why)
            return ElicitResult(action="decline")
        question = asyncio.ensure_future(self.elicitor.elicit(self.server, params, scope))
        if scope is not None:
            scope.questions.add(question)
            scope.asked += 1
        else:
            self._unscoped = question
        try:
            await asyncio.wait({question})  # the call ending cancels the question, not this callback
        except asyncio.CancelledError:  # the client itself is closing
            question.cancel()
            raise
        finally:
            if scope is not None:
                scope.questions.discard(question)
            elif self._unscoped is question:
                self._unscoped = None
        if question.cancelled():  # its tool call ended (cancelled or timed out): the server is told cancel
            log.info("MCP server %r: its question was cancelled with its tool call", self.server)
            return ElicitResult(action="cancel")
        return question.result()

    async def message(self, message: Any) -> bool:
        """Pass on an elicitation/complete notification; True when `message` was one."""
        from mcp.types import ElicitCompleteNotification

        if not isinstance(message, ElicitCompleteNotification):
            return False
        if self.elicitor is not None:
            await self.elicitor.completed(self.server, message.params.elicitation_id)
        return True
