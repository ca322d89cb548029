"""What an agent sends a `crow serve` client, and how it reaches the socket quickly.

The SDK (0.12) moves every server→client message through a memory queue, a pump task and a stream
whose push starts two tasks, then writes it on its own: fine for a turn's stream, slow for a
session/load replay of thousands of updates (most of a 2,000-message load went there). Crow's
connection keeps the SDK's routing but:
- a replay travels as one UpdateBatch (serialized once, here) through the same queue as every other
  message, so it keeps its place: after what the agent sent before, before the load response;
- over SSE a batch is one body write; over WebSocket one message per update (the SDK's clients
  read one JSON-RPC message per frame), sent in a row;
- a stream's push is a plain put while the stream has room (the SDK's waits only when full).
The bytes of each notification are the SDK's own serialization of the same update.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from acp.http.server import OutboundStream

from ..acp.rpc.door import SESSION_UPDATE, update_params

BATCH_BYTES = 64 * 1024
"""A replay is cut into batches of about this size: the client reads the first while crow builds the next,
and a huge replay never becomes one huge write."""

Outbound = dict[str, Any]


@dataclass(frozen=True)
class UpdateBatch:
    """session/update notifications for one session, serialized, in order."""

    session_id: str
    frames: tuple[str, ...]

    def sse(self) -> bytes:
        return "".join(f"data: {frame}\n\n" for frame in self.frames).encode()


def encode_update(session_id: str, update: Any) -> str:
    """The notification as the SDK's connection writes it (AgentSideConnection.session_update)."""
    message = {"jsonrpc": "2.0", "method": SESSION_UPDATE, "params": update_params(session_id, update)}
    return json.dumps(message, separators=(",", ":"))


def batches(session_id: str, updates: Iterable[Any]) -> Iterator[UpdateBatch]:
    frames: list[str] = []
    size = 0
    for update in updates:
        frame = encode_update(session_id, update)
        frames.append(frame)
        size += len(frame)
        if size >= BATCH_BYTES:
            yield UpdateBatch(session_id, tuple(frames))
            frames, size = [], 0
    if frames:
        yield UpdateBatch(session_id, tuple(frames))


class AgentEnd:
    """The agent's end of its connection's queue (the SDK's Transport, plus batches)."""

    def __init__(
        self, queue: asyncio.Queue[Outbound | UpdateBatch | None], inbox: asyncio.Queue[Outbound | None]
    ) -> None:
        self._queue, self._inbox = queue, inbox
        self._closed = False

    async def send(self, message: dict[str, Any]) -> None:
        if self._closed:
            raise ConnectionError("Transport closed")
        self._queue.put_nowait(dict(message))  # unbounded, as the SDK's memory transport

    async def receive(self) -> dict[str, Any] | None:
        return await self._inbox.get()

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put_nowait(None)

    async def send_updates(self, session_id: str, updates: Iterable[Any]) -> None:
        """UpdateSink: the replay, in batches, in its place among everything else the agent sends. Each
        batch goes out while the next is built (the pump and the writer run at the sleep)."""
        for batch in batches(session_id, updates):
            if self._closed:
                raise ConnectionError("Transport closed")
            self._queue.put_nowait(batch)
            await asyncio.sleep(0)


class PumpEnd:
    """The connection's end: reads what the agent sent, delivers what the client sent."""

    def __init__(
        self, queue: asyncio.Queue[Outbound | UpdateBatch | None], inbox: asyncio.Queue[Outbound | None]
    ) -> None:
        self._queue, self._inbox = queue, inbox

    async def send(self, message: dict[str, Any]) -> None:
        self._inbox.put_nowait(dict(message))

    async def receive(self) -> Outbound | UpdateBatch | None:
        return await self._queue.get()

    async def close(self) -> None:
        self._inbox.put_nowait(None)


def transport_pair() -> tuple[AgentEnd, PumpEnd]:
    out: asyncio.Queue[Outbound | UpdateBatch | None] = asyncio.Queue()
    inbox: asyncio.Queue[Outbound | None] = asyncio.Queue()
    return AgentEnd(out, inbox), PumpEnd(out, inbox)


class Stream(OutboundStream):
    """The SDK's bounded stream, whose push is a plain put while there is room, and which carries batches."""

    async def push(self, message: Any) -> None:
        if self._closed.is_set():
            return
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait(message)
            return
        await super().push(message)  # full: wait for the reader, or for the close

    async def chunks(self, keepalive: float) -> AsyncIterator[list[Any]]:
        """Everything queued, as soon as there is something (one write for a burst); [] after `keepalive`
        idle seconds; the end once the stream is closed."""
        while True:
            ready = self._ready()
            if not ready:
                try:
                    ready = [await asyncio.wait_for(self._queue.get(), keepalive)]
                except TimeoutError:
                    yield []
                    continue
                ready += self._ready()
            if None in ready:  # closed
                if head := ready[: ready.index(None)]:
                    yield head
                return
            yield ready

    def _ready(self) -> list[Any]:
        ready = []
        while not self._queue.empty():
            ready.append(self._queue.get_nowait())
        return ready
