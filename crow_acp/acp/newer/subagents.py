"""Subagent sessions (1.34): `subagent_update`, its states, and `session_message` (a hand-off)."""

from __future__ import annotations

from typing import Any

# Subagent sessions (1.34; zod: zSubagentUpdate, zSessionMessage, zSubagentSessionCapabilities, zStateUpdate).
# Sent only to a client that advertised `subagents`. The SDK's models do not know these updates, so
# they are JSON dicts, sent through the update door (acp/update_door.py `send_update`).


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
