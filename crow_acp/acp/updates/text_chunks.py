"""A cheap path to the editor for the updates a streamed reply sends most: text and thought chunks.

The SDK's `session_update` validates a SessionNotification around the update (a pydantic model the
caller already validated) and serializes both, per chunk of a streamed reply: that cost more than
the rest of crow's work on the chunk. Where crow serves on its own wire (`crow acp` over stdio),
serve.py registers a TextChannel for the connection, and AcpUpdates sends text and thought chunks
through it as the JSON the SDK would have written: the same transport and write lock as every other
message (the wire still redacts keys), so the order of everything the editor gets stays the same.
Other connections (crow serve, multi-agent members, in-process tests) have no channel: the SDK
sends their chunks as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..rpc.wire import StdioTransport

SESSION_UPDATE = "session/update"
StreamedKind = Literal["agent_message_chunk", "agent_thought_chunk"]


@dataclass(frozen=True)
class StreamedText:
    """One agent_message_chunk or agent_thought_chunk of text, as it goes on the wire."""

    kind: StreamedKind
    text: str
    message_id: str | None

    def params(self, session_id: str) -> dict[str, Any]:
        update: dict[str, Any] = {"sessionUpdate": self.kind, "content": {"type": "text", "text": self.text}}
        if self.message_id is not None:
            update["messageId"] = self.message_id
        return {"sessionId": session_id, "update": update}


class TextChannel:
    """Sends StreamedText as session/update notifications on crow's own wire."""

    def __init__(self, wire: StdioTransport) -> None:
        self._wire = wire

    async def send(self, session_id: str, chunk: StreamedText) -> None:
        await self._wire.send({"jsonrpc": "2.0", "method": SESSION_UPDATE, "params": chunk.params(session_id)})


_channels: dict[int, tuple[Any, TextChannel]] = {}
"""id(connection) -> (the connection, kept so that the id stays its own; its channel)."""


def attach(connection: Any, wire: StdioTransport) -> None:
    """Let AcpUpdates send `connection`'s text chunks on `wire`, the transport it serves on."""
    _channels[id(connection)] = (connection, TextChannel(wire))


def detach(connection: Any) -> None:
    """Forget `connection`'s channel once it stopped serving (an agent hosted in a long-lived process)."""
    entry = _channels.get(id(connection))
    if entry is not None and entry[0] is connection:
        del _channels[id(connection)]


def channel_of(connection: Any) -> TextChannel | None:
    entry = _channels.get(id(connection))
    return entry[1] if entry is not None and entry[0] is connection else None
