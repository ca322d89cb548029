"""A WebSocket client of `crow serve`: the SDK's handling (acp.ws.server), reading crow's outbound stream.

One ACP connection per socket; every server→client message is a text frame, a replay's updates one
frame each (outbound.py). When the socket closes, the connection and its sessions are torn down; when
the server ends the connection (its user removed from --users), the socket is closed with 1008.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

from acp.http.protocol import CONNECTION_ID_HEADER

from .connection import CrowConnection, CrowServer
from .outbound import UpdateBatch

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
INVALID_PAYLOAD = 1007
"""WebSocket close code: a message whose data the endpoint cannot accept (RFC 6455)."""
POLICY = 1008
"""WebSocket close code: the server ended the connection by its policy (a user removed or changed)."""
IDLE = 3600.0
"""Seconds between wake-ups of an idle socket's writer (nothing is sent: WebSocket pings are uvicorn's)."""


async def serve_websocket(server: CrowServer, receive: Receive, send: Send) -> None:
    if (await receive())["type"] != "websocket.connect":
        return
    state = server.create_websocket_connection()
    assert isinstance(state, CrowConnection)
    await send(
        {"type": "websocket.accept", "headers": [(CONNECTION_ID_HEADER.lower().encode(), state.connection_id.encode())]}
    )
    writer = asyncio.ensure_future(_outbound(state, send))
    reader = asyncio.ensure_future(_inbound(state, receive))
    try:
        with state.activity.busy():  # the socket is the connection's stream while it is open
            await asyncio.wait({writer, reader}, return_when=asyncio.FIRST_COMPLETED)
            if writer.done() and not reader.done():  # the server closed the connection: its user was removed
                await send({"type": "websocket.close", "code": POLICY, "reason": "connection ended by the server"})
            elif reader.done() and not reader.result():
                await send({"type": "websocket.close", "code": INVALID_PAYLOAD, "reason": "JSON nested too deep"})
    finally:
        for task in (writer, reader):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):  # the socket may be gone already
                await task
        await server.registry.remove(state.connection_id)


async def _inbound(state: CrowConnection, receive: Receive) -> bool:
    """Text frames holding a JSON object go to the agent; anything else is ignored, as the SDK does.
    True when the client closed; False at a frame nested deeper than the parser can go (the socket is
    closed with 1007: such a frame has no id to answer)."""
    while (message := await receive())["type"] != "websocket.disconnect":
        text = message.get("text") if message["type"] == "websocket.receive" else None
        try:
            payload = json.loads(text) if text is not None else None
        except json.JSONDecodeError:
            continue
        except RecursionError:
            return False
        if isinstance(payload, dict):
            await state.deliver_to_agent(payload)
    return True


async def _outbound(state: CrowConnection, send: Send) -> None:
    async for chunk in state.outbound(None).chunks(IDLE):
        for item in chunk:
            frames = item.frames if isinstance(item, UpdateBatch) else (json.dumps(item, separators=(",", ":")),)
            for frame in frames:
                await send({"type": "websocket.send", "text": frame})
