"""What /rewind says: the numbered list of the user's messages, and the summary of a rewind.

Also the question a rewind asks in ask mode before it overwrites files changed outside crow.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

import anyio
from acp.schema import AllowedOutcome, PermissionOption, RequestPermissionResponse, ToolCallUpdate
from pydantic import ValidationError

from ...core.session import Session
from ...history import StoredMessage
from ...util.secrets import redact

log = logging.getLogger(__name__)
PREVIEW = 60
SHOWN = 5
"""Paths named per list before "and N more"."""
OVERWRITE = PermissionOption(option_id="overwrite", name="Overwrite them", kind="allow_once")
LEAVE = PermissionOption(option_id="leave", name="Leave them alone", kind="reject_once")


@dataclass
class Outcome:
    """What a rewind did."""

    message: int
    chat: bool
    files: bool
    fork: str | None = None
    restored: list[str] = field(default_factory=list)
    left_alone: list[str] = field(default_factory=list)
    not_restored: list[str] = field(default_factory=list)
    note: str = ""

    def summary(self) -> str:
        what = " and ".join(name for name, on in (("the conversation", self.chat), ("the files", self.files)) if on)
        lines = [f"Rewound {what} to before message {self.message}."]
        if self.fork:
            lines.append(f"The later part of the conversation is kept as session {self.fork}.")
        if self.files:
            lines.append(f"Files put back: {names(self.restored) or 'none'}.")
        if self.left_alone:
            lines.append(f"Left alone (changed outside crow since): {names(self.left_alone)}.")
        if self.not_restored:
            why = "the checkpoint could not keep them: over a limit, or holding a key"
            lines.append(f"Not restored ({why}): {names(self.not_restored)}.")
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "messageIndex": self.message,
            "chat": self.chat,
            "files": self.files,
            "forkSessionId": self.fork,
            "restored": self.restored,
            "leftAlone": self.left_alone,
            "notRestored": self.not_restored,
            "summary": self.summary(),
        }


def names(paths: list[str]) -> str:
    shown = ", ".join(paths[:SHOWN])
    return f"{shown} and {len(paths) - SHOWN} more" if len(paths) > SHOWN else shown


def prompts(session: Session) -> list[StoredMessage]:
    """The user's messages in the kept history, in order: /rewind numbers them from 1."""
    return [entry for entry in session.history if entry.meta.kind == "prompt" and entry.row_id is not None]


def preview(entry: StoredMessage) -> str:
    content = entry.message.get("content")
    if isinstance(content, list):
        content = " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    text = " ".join(redact(str(content or "")).split())
    return text if len(text) <= PREVIEW else text[: PREVIEW - 1] + "…"


def listing(entries: list[StoredMessage], changed: list[list[str] | None]) -> str:
    """The numbered list: each message's preview and the files changed since its checkpoint."""
    if not entries:
        return "Nothing to rewind: this session has no messages yet."
    lines = ["Your messages (`/rewind N` goes back to before message N; `--chat` or `--files` for one of the two):"]
    for number, (entry, files) in enumerate(zip(entries, changed, strict=True), start=1):
        since = "no file checkpoint" if files is None else f"files changed since: {names(files) or 'none'}"
        lines.append(f"{number}. {preview(entry)} ({since})")
    return "\n".join(lines)


async def may_overwrite(session: Session, paths: list[str], timeout: float) -> bool:
    """Ask the editor whether to overwrite files changed outside crow; anything but "overwrite" keeps them,
    no answer within `timeout` ([permissions] timeout, as a tool's question) too."""
    update = ToolCallUpdate(
        tool_call_id=f"rewind-{uuid.uuid4().hex[:12]}",
        title=f"Rewind: overwrite {len(paths)} file(s) changed outside crow since the checkpoint?",
        kind="edit",
        status="pending",
        raw_input={"files": paths},
    )
    try:
        with anyio.fail_after(timeout):
            response = await session.client.request_permission(
                session_id=session.id, tool_call=update, options=[OVERWRITE, LEAVE]
            )
        answer = RequestPermissionResponse.model_validate(response, from_attributes=True)
    except (ValidationError, TimeoutError):
        return False
    except Exception as exc:  # the editor is others' code: whatever it does, the files stay
        log.warning("rewind question failed: %r", exc)
        return False
    outcome = answer.outcome
    return isinstance(outcome, AllowedOutcome) and outcome.option_id == OVERWRITE.option_id
