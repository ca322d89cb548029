"""The ASGI app `crow serve` runs: the SDK's ACP endpoint behind Host/Origin checks, a bearer token,
limits and a health check.

    POST/GET/DELETE /acp   Streamable HTTP (SSE streams)       WebSocket /acp   the same, on one socket
    GET /health            200 {"ready": true, "store": "ok"} or 503 with what is wrong (no token needed)
    GET /metrics           Prometheus text (metrics.py), for an admin's token or the --metrics-token-file one

Every request and upgrade passes the gate first (guard.py: a foreign Host or any browser Origin is
refused with 403), then the token, which names the user (auth.py: 401, or 429 for an address that
keeps guessing). A connection belongs to the user who opened it: another user's request naming its
id is answered as for an unknown connection. A JSON body nested too deep to parse is answered with the JSON-RPC
error -32600 (HTTP 400), not a 500.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from acp.http.asgi import AcpAsgiApp
from acp.http.protocol import CONNECTION_ID_HEADER

from ..store import SessionStore
from ..telemetry import spans
from .auth import Auth
from .connection import CURRENT_USER, CrowConnection, CrowServer
from .guard import Gate
from .metrics import CONTENT_TYPE
from .reaper import reap_forever
from .ws import serve_websocket

log = logging.getLogger(__name__)

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

PATH = "/acp"
CONNECTION_ID = CONNECTION_ID_HEADER.lower().encode()
HEALTH = "/health"
METRICS = "/metrics"


@dataclass(frozen=True)
class Limits:
    max_connections: int = 256
    """ACP connections (HTTP or WebSocket) at once; more get 503."""
    max_requests: int = 64
    """Unanswered requests per connection; more get a JSON-RPC error."""
    max_body: int = 50 * 1024 * 1024
    """Bytes in one POST body or WebSocket message (prompts carry images); more get 413."""
    idle_timeout: float = 300.0
    """Seconds an HTTP connection may go without a request or an open stream before it is closed."""
    header_timeout: float = 10.0
    """Seconds a client has to send a request's headers (sockets.py)."""


class CrowApp:
    def __init__(
        self,
        server: CrowServer,
        store: SessionStore,
        *,
        auth: Auth,
        limits: Limits,
        gate: Gate,
        metrics_token: str | None = None,
    ) -> None:
        self.metrics_token = metrics_token
        self.server = server
        self.store = store
        self.auth = auth
        self.limits = limits
        self.gate = gate
        self.draining = False
        self._acp = AcpAsgiApp(server)
        self._reaper: asyncio.Task[None] | None = None
        self._watcher: asyncio.Task[None] | None = None

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
        elif (refusal := self.gate.refusal(_header(scope, b"host"), _header(scope, b"origin"))) is not None:
            await self._refuse(scope, send, 403, refusal)
        elif kind == "http" and scope["path"] == HEALTH:
            await self._health(send)
        elif kind == "http" and scope["path"] == METRICS:
            await self._metrics(scope, send)
        elif scope["path"] != PATH:
            await self._refuse(scope, send, 404, "Not found: the ACP endpoint is /acp")
        else:
            await self.auth.refresh(self.server.crow_registry)
            user = self.auth.check(scope, _header(scope, b"authorization"))
            if user == 429:
                await self._refuse(scope, send, 429, "Too many wrong tokens from this address; wait a minute")
            elif isinstance(user, int):
                await self._refuse(scope, send, 401, "A valid bearer token is required (Authorization: Bearer …)")
            else:
                reset, named = CURRENT_USER.set(user), spans.USER.set(user.name)  # log lines name the user
                try:
                    await self._acp_endpoint(scope, receive, send)
                finally:
                    CURRENT_USER.reset(reset)
                    spans.USER.reset(named)

    async def _acp_endpoint(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if self.draining:
            await self._refuse(scope, send, 503, "Shutting down")
        elif kind == "websocket" and self.server.crow_registry.full():
            await self._refuse(scope, send, 503, "Too many connections")
        elif kind == "http" and _content_length(scope) > self.limits.max_body:
            await self._refuse(scope, send, 413, f"Request body over {self.limits.max_body} bytes")
        elif kind == "websocket":
            await serve_websocket(self.server, receive, send)
        else:
            await self._http(scope, receive, send)

    async def _http(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        """The SDK's handling, counted as activity of its connection, a stream ended when its client goes."""
        state = self.server.crow_registry.get(_header(scope, CONNECTION_ID) or "")
        user = CURRENT_USER.get()
        if isinstance(state, CrowConnection) and user is not None and state.user.name != user.name:
            await _json(send, 404, {"error": "Unknown connection"})  # another user's: as if it did not exist
            return
        if not isinstance(state, CrowConnection):  # initialize, or an unknown id the SDK answers
            await self._parsed(scope, receive, send)
            return
        with state.activity.busy():
            if scope["method"] == "GET":
                await _until_disconnect(self._acp(scope, receive, send), receive)
            else:
                await self._parsed(scope, receive, send)

    async def _parsed(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        started = False

        async def tracked(message: dict[str, Any]) -> None:
            nonlocal started
            started = True
            await send(message)

        try:
            await self._acp(scope, self._bounded(receive), tracked)
        except RecursionError:  # json.loads of a body nested deeper than Python's stack (the SDK parses it)
            if started:
                raise
            error = {"code": -32600, "message": "Invalid Request: JSON nested too deep"}
            await _json(send, 400, {"jsonrpc": "2.0", "id": None, "error": error})

    async def _metrics(self, scope: dict[str, Any], send: Send) -> None:
        metrics = self.server.crow_registry.metrics
        authorization = _header(scope, b"authorization") or ""
        if metrics is None:
            await self._refuse(scope, send, 404, "No metrics here")
            return
        if not (
            self.metrics_token and hmac.compare_digest(authorization.encode(), f"Bearer {self.metrics_token}".encode())
        ):
            await self.auth.refresh(self.server.crow_registry)
            user = self.auth.check(scope, authorization)
            if isinstance(user, int):
                await self._refuse(scope, send, user, "An admin's bearer token or the metrics token is required")
                return
            if not user.admin:
                await self._refuse(scope, send, 403, f"User {user.name} is not an admin")
                return
        headers = [(b"content-type", CONTENT_TYPE.encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": metrics.render()})

    def _bounded(self, receive: Receive) -> Receive:
        """A body without Content-Length (chunked) is cut off at the limit too: the rest is not read."""
        seen = 0

        async def bounded() -> dict[str, Any]:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limits.max_body:
                return {"type": "http.request", "body": b"", "more_body": False}  # invalid JSON: answered 400
            return message

        return bounded

    async def _health(self, send: Send) -> None:
        try:
            await asyncio.wait_for(self.store.ping(), timeout=5)
            store = "ok"
        except Exception as exc:  # the boundary with the database driver: any failure is "not ready"
            store = f"unreachable: {type(exc).__name__}"
        ready = store == "ok" and not self.draining
        body = {
            "ready": ready,
            "draining": self.draining,
            "store": store,
            "connections": len(self.server.crow_registry.connections),
        }
        await _json(send, 200 if ready else 503, body)

    async def _refuse(self, scope: dict[str, Any], send: Send, status: int, message: str) -> None:
        if scope["type"] == "websocket":
            # Before accept, a close makes the server answer the upgrade with 403.
            await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
            return
        await _json(send, status, {"error": message})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._reaper = asyncio.create_task(reap_forever(self.server.crow_registry, self.limits.idle_timeout))
                self._watcher = asyncio.create_task(self.auth.watch(self.server.crow_registry))
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                for task in (self._reaper, self._watcher):
                    if task is not None:
                        task.cancel()
                await send({"type": "lifespan.shutdown.complete"})  # run.py drains before uvicorn stops
                return


async def _until_disconnect(handler: Awaitable[None], receive: Receive) -> None:
    """Run an SSE stream's handler until it ends or its client disconnects. uvicorn drops what is sent
    to a client that is gone without saying so, and the SDK's stream never reads: it would run forever."""
    stream = asyncio.ensure_future(handler)
    gone = asyncio.ensure_future(_disconnect(receive))
    try:
        done, _ = await asyncio.wait({stream, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (stream, gone):
            task.cancel()
        await asyncio.gather(stream, gone, return_exceptions=True)
    if stream in done:
        stream.result()  # its error, if it failed, reaches uvicorn as before


async def _disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def _content_length(scope: dict[str, Any]) -> int:
    try:
        return int(_header(scope, b"content-length") or 0)
    except ValueError:
        return 0


async def _json(send: Send, status: int, body: dict[str, Any]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})
