"""ACP shapes newer than the SDK's: what clients of schema 1.20 to 1.34 (2026-11-20) send crow.

The installed SDK (agent-client-protocol 0.12.1) was generated from schema 1.19: its pydantic models
drop every field they do not know, so the capabilities a newer client advertises (notices,
compaction, subagents, plan operations) would never reach crow. The requests crow routes are
re-declared here as subclasses that keep those fields, named as the spec names them
(agentclientprotocol.com, protocol/v1); the machine-readable reference is the zod schema of
@agentclientprotocol/sdk 2.4.0 (tests/zod_check.py validates what crow sends against it).

Every feature is offered only to a client that advertised it: ClientFeatures says which.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acp.schema import InitializeRequest
from pydantic import model_validator


@dataclass(frozen=True)
class ClientFeatures:
    """The newer client capabilities, each True only when the client advertised it."""

    elicitation_form: bool = False
    """clientCapabilities.elicitation.form (1.21): `elicitation/create` in form mode."""
    elicitation_url: bool = False
    """clientCapabilities.elicitation.url (1.21): `elicitation/create` in URL mode."""
    notices: bool = False
    """clientCapabilities.session.notices (1.25): `notice` session updates."""
    compaction: bool = False
    """clientCapabilities.session.compaction (1.25): `compaction_update` and `compaction_summary_chunk`."""
    subagents: bool = False
    """clientCapabilities.subagents (1.34): child sessions, `subagent_update`, `session_message`."""
    plan: bool = False
    """clientCapabilities.plan (1.34): `plan_update` and `plan_removed` instead of the legacy `plan`."""

    @classmethod
    def from_capabilities(cls, raw: Any) -> ClientFeatures:
        """Read from the raw `clientCapabilities` object; anything malformed counts as not advertised."""
        caps = _object(raw)
        elicitation = _object(caps.get("elicitation"))
        session = _object(caps.get("session"))
        return cls(
            elicitation_form=_advertised(elicitation.get("form")),
            elicitation_url=_advertised(elicitation.get("url")),
            notices=_advertised(session.get("notices")),
            compaction=_advertised(session.get("compaction")),
            subagents=_advertised(caps.get("subagents")),
            plan=_advertised(caps.get("plan")),
        )


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _advertised(value: Any) -> bool:
    """A capability object (`{}` and up) advertises it; null, false or anything else does not."""
    return isinstance(value, dict)


class NewerInitializeRequest(InitializeRequest):
    """`initialize`, with the newer client capabilities kept as `client_features`."""

    client_features: ClientFeatures = ClientFeatures()

    @model_validator(mode="before")
    @classmethod
    def _read_features(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = {**data, "client_features": ClientFeatures.from_capabilities(data.get("clientCapabilities"))}
        return data


# Subagent sessions (1.34; zod: zSubagentUpdate, zSessionMessage, zSubagentSessionCapabilities, zStateUpdate).
# Sent only to a client that advertised `subagents`. The SDK's models do not know these updates, so
# they go out as plain dicts through `send_newer_update`.


def subagent_update(
    child_sid: str,
    *,
    title: str | None = None,
    description: str | None = None,
    state: dict[str, Any] | None = None,
    cancel: bool = True,
) -> dict[str, Any]:
    """`subagent_update` (on the parent): announces `child_sid` the first time (with a title), patches it
    later. With `cancel` the child advertises it: a client's session/cancel on it stops that child's work."""
    update: dict[str, Any] = {"sessionUpdate": "subagent_update", "sessionId": child_sid}
    if title is not None:
        update.update(title=title, capabilities={"cancel": {}} if cancel else {})
    if description is not None:
        update["description"] = description
    if state is not None:
        update["state"] = state
    return update


def running_state() -> dict[str, Any]:
    return {"state": "running"}


def idle_state(stop_reason: str, error: str | None = None) -> dict[str, Any]:
    """The child is idle again after a turn that ended with `stop_reason` ("error" carries its message)."""
    if stop_reason == "error":
        return {"state": "idle", "stopReason": "error", "error": {"code": -32603, "message": error or "failed"}}
    return {"state": "idle", "stopReason": stop_reason}


def session_message(message_id: str, sender_sid: str, recipient_sid: str, text: str) -> dict[str, Any]:
    """`session_message`: `text` sent from one session to another (a hand-off)."""
    return {
        "sessionUpdate": "session_message",
        "messageId": message_id,
        "senderSessionId": sender_sid,
        "recipientSessionId": recipient_sid,
        "content": [{"type": "text", "text": text}],
    }


async def send_newer_update(conn: Any, session_id: str, update: dict[str, Any]) -> None:
    """A session/update whose shape the SDK's models do not know, on the SDK connection's own writer (so
    it keeps its place among the updates sent through the models). Until one shared door for such
    updates lands, this is crow's only one."""
    from acp.agent.connection import AgentSideConnection
    from acp.meta import CLIENT_METHODS

    if not isinstance(conn, AgentSideConnection):
        raise TypeError(f"cannot send {update['sessionUpdate']} on {type(conn).__name__}")
    params = {"sessionId": session_id, "update": update}
    await conn._conn.send_notification(CLIENT_METHODS["session_update"], params)  # the SDK's only writer
