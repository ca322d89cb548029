"""The one door for session updates the SDK's models do not know: `send_update`.

The SDK's `session_update` validates its update against its own union (schema 1.19) and
serializes it by that union's schema: a `notice`, a `compaction_update`, a `plan_update`, or a
`tool_call` with its `name` (1.22) would be refused or lose its newer fields. Such an update is a
pydantic model that also derives from `NewerUpdate` (rpc/shapes/ declares them, aliased as the spec
names them); `send_update` writes it as
the notification the SDK would have written, serialized by its own class, on the SDK's connection
(same transport and order as every other message, and its observers see it). Any other update goes
through the SDK as before.

Everything crow sends the editor as a session update goes through here (the live stream, a load's
replay, a MultiAgent's attribution), so a newer update may be sent from anywhere:

    await send_update(conn, session_id, Notice(session_update="notice", severity="warning", title=...))

Connections that are not the SDK's (a MultiAgent member's, a test's in-process client) receive the
model itself through their `session_update`; it has every attribute of the shape it extends.

Text chunks: a cheap door for the updates a streamed reply sends most. The SDK's `session_update`
validates a SessionNotification around the update (a pydantic model the caller already validated) and
serializes both, per chunk of a streamed reply: that cost more than the rest of crow's work on the chunk.
Where crow serves on its own wire (`crow acp` over stdio), server/stdio.py attaches a TextChannel to the
connection, and AcpUpdates sends text and thought chunks through it as the JSON the SDK would have
written: the same transport and write lock as every other message (the wire still redacts keys), so the
order of everything the editor gets stays the same. Other connections (crow serve, multi-agent members,
in-process tests) have no channel: the SDK sends their chunks as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from acp.agent.connection import AgentSideConnection
from acp.meta import CLIENT_METHODS
from acp.schema import SessionNotification
from acp.utils import serialize_params
from pydantic import BaseModel

from .wire import StdioTransport

SESSION_UPDATE = CLIENT_METHODS["session_update"]


class NewerUpdate:
    """Marks a pydantic session update crow serializes itself (the SDK's models would drop or refuse it).

    Its `session_update` field is required (never a default): the SDK's serialization leaves defaults out.
    """


def update_params(session_id: str, update: Any) -> dict[str, Any]:
    """The params of the session/update notification carrying `update`, as JSON values."""
    if isinstance(update, NewerUpdate) and isinstance(update, BaseModel):
        return {"sessionId": session_id, "update": serialize_params(update)}
    return serialize_params(SessionNotification(session_id=session_id, update=update))


def json_rpc(conn: Any) -> Any:
    """The SDK connection's JSON-RPC layer (ids, pending answers, write lock, observers), for messages it has
    no method for; None for a connection that is not the SDK's (a MultiAgent member's, an in-process test)."""
    # The SDK (pinned to 0.12) has no public way to send a message it cannot model: this is its only door.
    return conn._conn if isinstance(conn, AgentSideConnection) else None


async def send_update(conn: Any, session_id: str, update: Any) -> None:
    """Send `update` for `session_id` on `conn`: through the SDK, or as its own JSON when it is newer."""
    if isinstance(update, NewerUpdate) and (rpc := json_rpc(conn)) is not None:
        await rpc.send_notification(SESSION_UPDATE, update_params(session_id, update))
        return
    await conn.session_update(session_id=session_id, update=update)


# ---- Text chunks, serialized once ----

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
