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
"""

from __future__ import annotations

from typing import Any

from acp.agent.connection import AgentSideConnection
from acp.meta import CLIENT_METHODS
from acp.schema import SessionNotification
from acp.utils import serialize_params
from pydantic import BaseModel

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
