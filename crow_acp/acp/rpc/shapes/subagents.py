"""Subagent sessions (1.34): `subagent_update`, its states, and `session_message` (a hand-off).

zod (v1 unstable): zSubagentUpdate, zSubagentSessionCapabilities, zStateUpdate, zSessionMessage. Sent only
to a client that advertised `subagents`. The SDK's models do not know these updates: they are NewerUpdate
models, sent through the update door (rpc/door.py `send_update`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from acp.schema import TextContentBlock
from pydantic import BaseModel, ConfigDict, Field

from ..door import NewerUpdate


class _Shape(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class CancelCapability(_Shape):
    """zSessionCancelCapabilities: present (empty) when a client's session/cancel on the child stops its work."""


class SubagentCapabilities(_Shape):
    cancel: CancelCapability | None = None


class RunningState(_Shape):
    """The child's foreground work is in progress (zRunningStateUpdate)."""

    state: Literal["running"]


class StopError(_Shape):
    code: int
    message: str


class IdleState(_Shape):
    """The child is ready for another prompt; its last turn ended with `stop_reason` (zIdleStateUpdate)."""

    state: Literal["idle"]
    stop_reason: Annotated[str, Field(alias="stopReason")]
    error: StopError | None = None
    """Set when the turn failed (stop reason "error")."""


class SubagentUpdate(NewerUpdate, _Shape):
    """`subagent_update`, on the parent: the first for a child announces it (with its title), later ones patch it."""

    session_update: Annotated[Literal["subagent_update"], Field(alias="sessionUpdate")]
    session_id: Annotated[str, Field(alias="sessionId")]
    title: str | None = None
    description: str | None = None
    capabilities: SubagentCapabilities | None = None
    state: RunningState | IdleState | None = None


class SessionMessage(NewerUpdate, _Shape):
    """`session_message`: text sent from one session to another (a hand-off), on the recipient's session."""

    session_update: Annotated[Literal["session_message"], Field(alias="sessionUpdate")]
    message_id: Annotated[str, Field(alias="messageId")]
    sender_session_id: Annotated[str, Field(alias="senderSessionId")]
    recipient_session_id: Annotated[str, Field(alias="recipientSessionId")]
    content: list[TextContentBlock]


def subagent_update(
    child_sid: str,
    *,
    title: str | None = None,
    description: str | None = None,
    state: RunningState | IdleState | None = None,
    cancel: bool = True,
) -> SubagentUpdate:
    """Announces `child_sid` the first time (with a title), patches it later. With `cancel` the child
    advertises it: a client's session/cancel on it stops that child's work."""
    capabilities = None
    if title is not None:
        capabilities = SubagentCapabilities(cancel=CancelCapability() if cancel else None)
    return SubagentUpdate(
        session_update="subagent_update",
        session_id=child_sid,
        title=title,
        description=description,
        capabilities=capabilities,
        state=state,
    )


def running_state() -> RunningState:
    return RunningState(state="running")


def idle_state(stop_reason: str, error: str | None = None) -> IdleState:
    """The child is idle again after a turn that ended with `stop_reason` ("error" carries its message)."""
    if stop_reason == "error":
        return IdleState(state="idle", stop_reason="error", error=StopError(code=-32603, message=error or "failed"))
    return IdleState(state="idle", stop_reason=stop_reason)


def session_message(message_id: str, sender_sid: str, recipient_sid: str, text: str) -> SessionMessage:
    return SessionMessage(
        session_update="session_message",
        message_id=message_id,
        sender_session_id=sender_sid,
        recipient_session_id=recipient_sid,
        content=[TextContentBlock(type="text", text=text)],
    )
