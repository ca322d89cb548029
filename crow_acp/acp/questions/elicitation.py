"""Questions for the user through the editor: ACP `elicitation/create` (schema 1.21, shapes in rpc/shapes/).

EditorQuestions is a session's Elicitor (mcp/elicit.py): an MCP server's question in the middle of
a tool call reaches the editor scoped to that call, in form mode when the client advertised
`elicitation.form` and URL mode when it advertised `elicitation.url`; otherwise crow declines on
the user's behalf and the tool's result tells the model why. The model's `ask_user` tool
(ask_user.py) asks through it too. While a question is open its tool call is `pending` and shows it.

Nothing the editor answers is trusted: a malformed answer, or content that does not satisfy the
form, is refused (logged) and the server is told `cancel`, as it is when the question times out
(`timeouts.elicitation`) or the editor fails the request; the model's result says which. The ACP
SDK (0.12.1, schema 1.19) has no method for these: they go out through its connection's own
`send_request`/`send_notification`, the JSON-RPC door every SDK method uses (ids, pending
answers, the write lock and the observers included), so an answer that arrives after crow
stopped waiting finds no pending request and is dropped by the SDK.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Literal

from acp.exceptions import RequestError
from pydantic import ValidationError

from ...events import Event, ToolCallWaiting
from ...mcp.elicit import CallScope
from ..rpc.door import json_rpc
from ..rpc.shapes.elicitation import (
    ELICITATION_COMPLETE,
    ELICITATION_CREATE,
    CompleteElicitationNotification,
    CreateElicitationRequest,
    CreateElicitationResponse,
    ElicitationSchema,
)
from ..updates.editor_link import EditorLink
from .form_check import refusal
from .question_shown import form_too_big, real_host, shown_message, unsafe_text

log = logging.getLogger(__name__)

CANCEL_REQUEST = "$/cancel_request"
"""The protocol's notification that a request is no longer wanted (zCancelRequestNotification)."""

Action = Literal["accept", "decline", "cancel"]


@dataclass(frozen=True)
class Answer:
    """What came of a question: the user's action and content, or why crow answered for them (`note`)."""

    action: Action
    content: dict[str, Any] | None = None
    note: str | None = None
    """Set when crow, not the user, decided (declined, refused an answer, timed out): the model is told."""


@dataclass(frozen=True)
class QuestionRoute:
    """Where a session's question goes: the editor connection's JSON-RPC layer, and the session and tool call
    ids the editor knows (a member's or a helper's own, or the ones they are shown under)."""

    rpc: Any
    session_id: str
    tool_call_id: str | None


class RoutesQuestions(ABC):
    """A connection that is not the editor's own but can put its sessions' questions to the editor: a
    MultiAgent member's (multi/conn.py), a delegate helper's (multi/child_conn.py)."""

    @abstractmethod
    def question_route(self, session_id: str, tool_call_id: str | None) -> QuestionRoute | None: ...


def route_of(conn: Any, session_id: str, tool_call_id: str | None) -> QuestionRoute | None:
    """How `conn` reaches the editor with a question of `session_id`; None: it cannot."""
    if isinstance(conn, RoutesQuestions):
        return conn.question_route(session_id, tool_call_id)
    rpc = json_rpc(conn)
    return QuestionRoute(rpc, session_id, tool_call_id) if rpc is not None else None


class EditorQuestions:
    """One session's questions for its user."""

    def __init__(self, session_id: str, editor: EditorLink, timeout: float, emit: Callable[[Event], Awaitable[None]]):
        self.session_id, self.editor, self.timeout, self._emit = session_id, editor, timeout, emit
        self._urls: dict[tuple[str, str], str] = {}  # (server, its elicitation id) -> the id the editor got

    def can_ask(self, mode: Literal["form", "url"]) -> bool:
        features = self.editor.features
        advertised = features.elicitation_form if mode == "form" else features.elicitation_url
        return advertised and route_of(self.editor.conn, self.session_id, None) is not None

    # The Elicitor of the session's MCP servers
    async def elicit(self, server: str, params: Any, scope: CallScope | None) -> Any:
        from mcp.types import ElicitResult

        with scope.timer.paused() if scope is not None else nullcontext():  # the user's time is not the tool's
            answer = await self._server_question(server, params, scope.call_id if scope else None)
        if answer.note:
            log.warning("MCP server %r: %s", server, answer.note)
            if scope is not None:
                scope.notes.append(answer.note)
        content = answer.content if answer.action == "accept" and params.mode == "form" else None
        return ElicitResult(action=answer.action, content=content)

    async def completed(self, server: str, elicitation_id: str) -> None:
        editor_id = self._urls.pop((server, elicitation_id), None)
        if editor_id is not None and (route := route_of(self.editor.conn, self.session_id, None)) is not None:
            notice = CompleteElicitationNotification(elicitation_id=editor_id)
            await route.rpc.send_notification(ELICITATION_COMPLETE, notice.wire())

    async def _server_question(self, server: str, params: Any, call_id: str | None) -> Answer:
        asked = f"The MCP server {server!r} asked for input"
        if not self.can_ask(params.mode):
            shown = "a form" if params.mode == "form" else "a web page to open"
            return Answer(
                "decline", note=f"{asked} the editor cannot show ({shown}); crow declined on the user's behalf."
            )
        if why := unsafe_text(params.message):
            return Answer("decline", note=f"{asked} with a message holding {why}; crow declined for the user.")
        request = CreateElicitationRequest(
            session_id=self.session_id, tool_call_id=call_id, mode=params.mode, message=params.message
        )
        if params.mode == "form":
            if why := form_too_big(params.message, params.requested_schema):
                return Answer("decline", note=f"{asked} with {why}; crow declined on the user's behalf.")
            try:
                request.requested_schema = ElicitationSchema.model_validate(params.requested_schema)
            except ValidationError:
                return Answer("decline", note=f"{asked} with a form that is not a flat object of simple fields; "
                              "crow declined on the user's behalf.")  # fmt: skip
            request.message = shown_message(server, params.message)
        else:
            host, why = real_host(params.url)
            if not params.url.startswith(("https://", "http://")) or why:
                return Answer(
                    "decline", note=f"{asked} at {why or 'a URL that is not http(s)'}; crow declined for the user."
                )
            request.url, request.elicitation_id = params.url, params.elicitation_id or str(uuid.uuid4())
            request.message = shown_message(server, params.message, host)
            if params.elicitation_id:
                self._urls[(server, params.elicitation_id)] = request.elicitation_id
        return await self.ask(request)

    async def ask(self, request: CreateElicitationRequest) -> Answer:
        """Ask the editor (its tool call `pending` meanwhile) and check the answer; cancelled with the caller."""
        call_id = request.tool_call_id
        route = route_of(self.editor.conn, self.session_id, call_id)
        if route is None:  # the editor went away since can_ask
            return Answer(
                "cancel", note="The editor could not ask the user (no connection); the question was cancelled."
            )
        shown = request.model_copy(update={"session_id": route.session_id, "tool_call_id": route.tool_call_id})
        rpc = route.rpc
        if call_id is not None:
            await self._emit(ToolCallWaiting(self.session_id, call_id, request.message))
        request_id = rpc._next_request_id  # what send_request takes before its first await (pinned SDK)
        try:
            async with asyncio.timeout(self.timeout):
                raw = await rpc.send_request(ELICITATION_CREATE, shown.wire())
        except TimeoutError:
            await withdraw(rpc, request_id)
            late = f"The user did not answer within {self.timeout:g} s; the question was cancelled."
            return Answer("cancel", note=late)
        except asyncio.CancelledError:  # the turn was cancelled, or the call ended: the editor stops asking too
            await asyncio.shield(withdraw(rpc, request_id))
            raise
        except (RequestError, OSError) as exc:  # the editor's error answer, or the connection gone: crow cancels
            return Answer("cancel", note=f"The editor could not ask the user ({exc}); the question was cancelled.")
        if call_id is not None:
            await self._emit(ToolCallWaiting(self.session_id, call_id, None))
        return checked(request, raw)


async def withdraw(rpc: Any, request_id: int) -> None:
    """Tell the editor crow no longer waits for its answer (`$/cancel_request`), so it closes the question."""
    try:
        await rpc.send_notification(CANCEL_REQUEST, {"requestId": request_id})
    except OSError:  # ConnectionError: the editor is gone, there is nothing left to close
        log.debug("could not withdraw question %s", request_id, exc_info=True)


def checked(request: CreateElicitationRequest, raw: Any) -> Answer:
    """The editor's answer as an Answer; one that is malformed or breaks the form is refused as a cancel."""
    refused = "The editor's answer was refused ({}); the question was treated as cancelled."
    try:
        answer = CreateElicitationResponse.model_validate(raw)
    except ValidationError as exc:
        problem = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}" for e in exc.errors()[:3])
        return Answer("cancel", note=refused.format(f"malformed: {problem}"))
    if answer.action != "accept" or request.requested_schema is None:
        return Answer(answer.action)
    content = answer.content or {}
    if why := refusal(request.requested_schema, content):
        return Answer("cancel", note=refused.format(f"it does not fit the form: {why}"))
    return Answer("accept", content)
