"""`$/cancel_request`: the client cancels one of its pending requests by id (ACP, stable since June 2026).

The notification's params are {requestId}. For session/load, resume and list, crow cancels the
handler's task (a load replaying a huge history, say) and answers the request with -32800 (Request
Cancelled); session/load and resume close the half-open session again (sessions/opener.py). A
session/prompt is cancelled as session/cancel does it, so its turn records what it did and answers
with the stop reason `cancelled`. Other requests are short, or must not stop half-way (session/new,
initialize): they finish and are answered as usual, which the spec allows. A request that finishes
first is answered as usual, and a cancel for an id that is unknown, already answered, or malformed
is ignored: a notification gets no answer.

The SDK's connection (agent-client-protocol 0.12.1, pinned) knows no such notification, and runs each
request as an anonymous task inside `Connection._process_message`. This module is the one place that
reaches into it: it takes over `_process_message` for requests and this notification, and runs each
request through the SDK's own `_execute_request`, `_transport` and `_notify_observers`, as
`Connection._run_request` does, in a task it can find by id. Check these names on any SDK upgrade.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from acp.connection import Connection, StreamDirection
from acp.meta import AGENT_METHODS

CANCEL_REQUEST = "$/cancel_request"
REQUEST_CANCELLED = -32800
STOPPED = frozenset({AGENT_METHODS["session_load"], AGENT_METHODS["session_resume"], AGENT_METHODS["session_list"]})
"""The requests whose task a cancel stops."""
PROMPT = AGENT_METHODS["session_prompt"]
log = logging.getLogger(__name__)

RequestKey = tuple[bool, int | str]
"""A JSON-RPC id as a dict key: 1 and "1" are different requests."""


def _key(request_id: Any) -> RequestKey | None:
    if isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool)):
        return (isinstance(request_id, str), request_id)
    return None  # null or malformed: such a request cannot be named by a cancel


class CancellableRequests:
    """Runs the incoming requests of one SDK connection as tasks that `$/cancel_request` can cancel."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._running: dict[RequestKey, tuple[asyncio.Task[None], dict[str, Any]]] = {}
        """The pending cancellable requests: their task and message."""
        self._cancelled: set[asyncio.Task[Any]] = set()
        self._sdk_process = conn._process_message
        conn._process_message = self._process  # type: ignore[method-assign]  # the SDK's only door (above)

    def _process(self, message: dict[str, Any]) -> None:
        method, key = message.get("method"), _key(message.get("id"))
        if method == CANCEL_REQUEST and "id" not in message:
            self._cancel(message.get("params"))
        elif key is None or key in self._running or not (method in STOPPED or method == PROMPT):
            self._sdk_process(message)  # responses, notifications, and requests no cancel stops: as before
        else:
            task = self._conn._tasks.create(self._run(key, message), name="acp.Connection.request")
            self._running[key] = (task, message)

    def _cancel(self, params: Any) -> None:
        key = _key(params.get("requestId")) if isinstance(params, dict) else None
        pending = self._running.get(key) if key is not None else None
        if pending is None:
            log.debug("$/cancel_request for no pending request: %.200r", params)
            return
        task, message = pending
        if message["method"] == PROMPT:  # the turn stops as on session/cancel, through the SDK's route
            params = message.get("params")
            session_id = params.get("sessionId") if isinstance(params, dict) else None
            cancel = {"jsonrpc": "2.0", "method": AGENT_METHODS["session_cancel"], "params": {"sessionId": session_id}}
            self._sdk_process(cancel)
            return
        self._cancelled.add(task)
        task.cancel()

    async def _run(self, key: RequestKey, message: dict[str, Any]) -> None:
        task = asyncio.current_task()
        assert task is not None
        try:
            payload = await self._conn._execute_request(message)
        except asyncio.CancelledError:
            if task not in self._cancelled:
                raise  # the connection is closing, not the client's cancel
            task.uncancel()
            payload = {"jsonrpc": "2.0", "id": message["id"], "error": _cancelled(message.get("method"))}
        finally:
            # From here on the request is answered: a cancel for it is ignored, so it never cuts the answer.
            del self._running[key]
            self._cancelled.discard(task)
        await self._conn._transport.send(payload)
        self._conn._notify_observers(StreamDirection.OUTGOING, payload)


def _cancelled(method: Any) -> dict[str, Any]:
    return {"code": REQUEST_CANCELLED, "message": "Request cancelled", "data": {"method": method}}
