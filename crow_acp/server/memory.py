"""An ACP connection inside one process that is still a real wire: bytes, lines, crow's wire on both ends.

`crow run` hosts its agent in its own process. Handing Python objects from client to agent would skip
what an editor's bytes go through, so each direction is an in-memory byte pipe carrying newline-delimited
JSON-RPC, and each end reads and writes it through crow's StdioTransport: its line limit, its repairs
and its answers to what is not a request run as they do on stdio. A pipe behaves like an OS pipe where
it matters: a writer waits while its reader is behind (back-pressure), its close is the reader's EOF,
and what is written after the reading end closed is dropped (the agent's last answers at shutdown
go nowhere, quietly, rather than failing the cancelled turn that writes them).
"""

from __future__ import annotations

import asyncio
from asyncio.streams import FlowControlMixin
from typing import Any

from ..acp.rpc.wire import MAX_MESSAGE, READ_PIECE, StdioTransport


class MemoryPipe(asyncio.WriteTransport):
    """The write end of a one-way pipe into `reader`; the reader pauses it when it holds too much."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        super().__init__()
        self._reader = reader
        self.protocol = FlowControlMixin()
        self._closing = False
        self._dropping = False
        self._paused = False
        reader.set_transport(self)  # it calls pause_reading/resume_reading when it holds too much

    def write(self, data: Any) -> None:
        if not self._closing and not self._dropping:
            self._reader.feed_data(bytes(data))

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        if not self._closing:
            self._closing = True
            self._reader.feed_eof()

    def pause_reading(self) -> None:
        if not self._paused:
            self._paused = True
            self.protocol.pause_writing()

    def resume_reading(self) -> None:
        if self._paused:
            self._paused = False
            self.protocol.resume_writing()

    def stop_reading(self) -> None:
        """The reading end went away: writes are dropped from now on, and a writer waiting for room goes on."""
        self._dropping = True
        self.resume_reading()


class MemoryTransport(StdioTransport):
    """One end of the pair: crow's wire over two pipes. Closing it closes both, as a process's exit does."""

    def __init__(
        self, inbound: MemoryPipe, reader: asyncio.StreamReader, outbound: MemoryPipe, max_message: int
    ) -> None:
        writer = asyncio.StreamWriter(outbound, outbound.protocol, None, asyncio.get_running_loop())
        super().__init__(reader, writer, max_message)
        self._inbound = inbound

    async def close(self) -> None:
        await super().close()
        self._inbound.stop_reading()


def memory_pair(client_max_message: int = MAX_MESSAGE) -> tuple[MemoryTransport, MemoryTransport]:
    """(the agent's end, the client's end) of a new in-memory ACP connection."""
    to_agent, to_client = asyncio.StreamReader(limit=READ_PIECE), asyncio.StreamReader(limit=READ_PIECE)
    into_agent, into_client = MemoryPipe(to_agent), MemoryPipe(to_client)
    agent = MemoryTransport(into_agent, to_agent, into_client, MAX_MESSAGE)
    client = MemoryTransport(into_client, to_client, into_agent, client_max_message)
    return agent, client
