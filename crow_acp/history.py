"""History entries: the chat message the model sees, and typed metadata only crow and the editor need.

    StoredMessage(message, meta)       one entry; `message` is the OpenAI chat message as sent
    Attachment                         a provider's own part of an assistant message (signed thinking,
                                       encrypted reasoning), kept opaque under ATTACHMENTS in the message
    EntryMeta                          what kind of entry it is, how to replay it, where it came from
    ToolDisplay                        how a tool result shows in the editor (title, kind, status, …)

The kinds of entry, and who writes them:

    message   an ordinary message (assistant replies, tool results, a callback's visible note)
    prompt    what the user (or a hand-off) prompted, with its ACP blocks: a turn starts here
    injected  a message for the model only (skills, reminders): never replayed to the editor
    summary   compaction's summary of what it replaced: replayed as a "Context compacted" marker
    ack       the assistant's acknowledgement after a summary (strict templates need alternation)

The store keeps `meta.to_json()` and reads it back with `EntryMeta.from_json()`, so it never
knows the fields. The JSON keeps the key names rows have always had (`blocks`, `message_id`,
`reasoning`, `tool`, `kind: "compaction"`, `hidden`, `copy`, `handoff`), so old rows load, and
keys crow does not know (a plugin's own) survive a round trip in `other`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast, get_args

from .events import ToolKind, ToolStatus

EntryKind = Literal["message", "prompt", "injected", "summary", "ack"]
CutKind = Literal["streaming", "steered"]
HIDDEN_KINDS: frozenset[str] = frozenset({"injected", "ack"})
_KNOWN = frozenset(
    {"kind", "hidden", "blocks", "message_id", "reasoning", "tool", "replaced", "skill", "copy", "handoff", "cut"}
)
_TOOL_KNOWN = frozenset({"name", "title", "kind", "status", "locations", "raw_input", "content"})


@dataclass
class ToolDisplay:
    """A tool result as the editor showed it, so session/load shows it the same way."""

    name: str
    title: str = ""
    kind: ToolKind = "other"
    status: ToolStatus = "completed"
    """completed or failed, once the call is over."""
    locations: list[str] = field(default_factory=list)
    raw_input: Any = None
    """The arguments as the editor saw them (the raw text when they were not a JSON object)."""
    content: list[dict[str, Any]] | None = None
    """ACP tool-call content (diffs, terminals, text) as JSON."""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "kind": self.kind,
            "status": self.status,
            "locations": list(self.locations),
            "raw_input": self.raw_input,
            "content": self.content,
        }

    @classmethod
    def from_json(cls, data: Any) -> ToolDisplay:
        data = data if isinstance(data, dict) else {}
        name = str(data.get("name") or "tool")
        locations = data.get("locations")
        content = data.get("content")
        return cls(
            name=name,
            title=str(data.get("title") or name),
            kind=cast(ToolKind, _one_of(data.get("kind"), get_args(ToolKind), "other")),
            status=cast(ToolStatus, _one_of(data.get("status"), get_args(ToolStatus), "completed")),
            locations=[str(p) for p in locations] if isinstance(locations, list) else [],
            raw_input=data.get("raw_input"),
            content=[c for c in content if isinstance(c, dict)] if isinstance(content, list) else None,
        )


@dataclass(frozen=True)
class Handoff:
    """The entry is a prompt one agent handed another (a bridge or a pattern's step)."""

    source: str | None
    """The agent that handed it over; None when a pattern's driver did."""


@dataclass
class EntryMeta:
    kind: EntryKind = "message"
    blocks: list[dict[str, Any]] | None = None
    """prompt: the ACP content blocks as the user sent them (what replay shows)."""
    message_id: str | None = None
    """assistant replies: the id the live stream used, so replayed chunks group the same way; summary:
    the id of its compaction, so a load replays it as the same compaction."""
    reasoning: str | None = None
    """assistant replies: the reasoning text streamed before the reply."""
    tool: ToolDisplay | None = None
    """tool results: how the call showed in the editor."""
    replaced: int | None = None
    """summary: how many messages it replaced."""
    skill: str | None = None
    """injected: the skill whose text this is."""
    cut: CutKind | None = None
    """assistant replies that stopped early: "streaming" (a draft: crow stopped while it streamed),
    "steered" (a steering message cut it off; what was shown is kept)."""
    copy: bool = False
    """A live copy, made by compaction, of an entry whose original stays archived for replay."""
    handoff: Handoff | None = None
    other: dict[str, Any] = field(default_factory=dict)
    """Keys crow does not know (a plugin's add_message extras), kept as they were written."""

    @property
    def hidden(self) -> bool:
        """Never replayed to the editor: the model's business only."""
        return self.kind in HIDDEN_KINDS

    @property
    def replayed(self) -> bool:
        """Whether session/load shows this entry (copies are shown through their originals)."""
        return not (self.copy or self.hidden)

    def with_copy(self) -> EntryMeta:
        return replace(self, copy=True)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.other)
        if self.kind == "summary":
            out["kind"] = "compaction"
        elif self.kind in HIDDEN_KINDS:
            out["hidden"] = True  # what rows have always said; older crow versions read it too
            if self.kind == "ack":
                out["kind"] = "ack"
        if self.kind == "prompt" or self.blocks is not None:
            out["blocks"] = list(self.blocks or [])
        optional = {
            "message_id": self.message_id,
            "reasoning": self.reasoning,
            "replaced": self.replaced,
            "skill": self.skill,
            "cut": self.cut,
        }
        out |= {key: value for key, value in optional.items() if value is not None}
        if self.tool is not None:
            out["tool"] = self.tool.to_json()
        if self.copy:
            out["copy"] = True
        if self.handoff is not None:
            out["handoff"] = {"from": self.handoff.source}
        return out

    @classmethod
    def from_json(cls, data: Any) -> EntryMeta:
        """Any row's metadata, old or new; what is not understood is kept in `other`, never an error."""
        data = data if isinstance(data, dict) else {}
        blocks = data.get("blocks")
        handoff = data.get("handoff")
        return cls(
            kind=_kind(data),
            blocks=[b for b in blocks if isinstance(b, dict)] if isinstance(blocks, list) else None,
            message_id=_str(data.get("message_id")),
            reasoning=_str(data.get("reasoning")),
            tool=ToolDisplay.from_json(data["tool"]) if isinstance(data.get("tool"), dict) else None,
            replaced=data["replaced"] if isinstance(data.get("replaced"), int) else None,
            skill=_str(data.get("skill")),
            cut=cast(CutKind, data["cut"]) if data.get("cut") in get_args(CutKind) else None,
            copy=bool(data.get("copy")),
            handoff=Handoff(_str(handoff.get("from"))) if isinstance(handoff, dict) else None,
            other={key: value for key, value in data.items() if key not in _KNOWN or _foreign_kind(key, value)},
        )


def _kind(data: dict[str, Any]) -> EntryKind:
    kind = data.get("kind")
    if kind == "compaction":
        return "summary"
    if data.get("hidden"):
        return "ack" if kind == "ack" else "injected"
    if "blocks" in data:
        return "prompt"
    return "message"


def _foreign_kind(key: str, value: Any) -> bool:
    """A plugin's own "kind" value is the plugin's, not ours: keep it."""
    return key == "kind" and value not in ("compaction", "ack")


def _one_of(value: Any, allowed: tuple[str, ...], default: str) -> str:
    return value if value in allowed else default


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


ATTACHMENTS = "crow_attachments"
"""The key of an assistant message that holds its attachments (as JSON). It rides inside the message, so
compaction, fork, load and export keep it as they keep the message; every wire takes it out of a request
and sends back only the attachments of its own wire and model."""


@dataclass(frozen=True)
class Attachment:
    """Parts of one reply only the provider that wrote them understands, sent back to it unchanged.

    anthropic: the reply's thinking and redacted_thinking blocks (with their signatures), in order;
    responses: the reply's reasoning items (with their encrypted content), in order."""

    wire: str
    model: str
    items: tuple[dict[str, Any], ...]

    def to_json(self) -> dict[str, Any]:
        return {"wire": self.wire, "model": self.model, "items": list(self.items)}

    @classmethod
    def from_json(cls, data: Any) -> Attachment | None:
        """None for anything that is not an attachment (a damaged row is sent without it)."""
        if not isinstance(data, dict):
            return None
        wire, model, items = data.get("wire"), data.get("model"), data.get("items")
        if not (isinstance(wire, str) and isinstance(model, str) and isinstance(items, list)):
            return None
        return cls(wire, model, tuple(item for item in items if isinstance(item, dict)))


def attachments(message: dict[str, Any]) -> list[Attachment]:
    """The message's attachments; [] when it has none or they are damaged."""
    raw = message.get(ATTACHMENTS)
    found = [Attachment.from_json(item) for item in raw] if isinstance(raw, list) else []
    return [item for item in found if item is not None]


def attachment_for(message: dict[str, Any], wire: str, model: str) -> Attachment | None:
    """The attachment this wire and model wrote, if any: another provider's (or model's) is left out."""
    return next((a for a in attachments(message) if a.wire == wire and a.model == model), None)


def without_attachments(message: dict[str, Any]) -> dict[str, Any]:
    """The message as a provider may see it (the same object when it has no attachments)."""
    if ATTACHMENTS not in message:
        return message
    return {key: value for key, value in message.items() if key != ATTACHMENTS}


@dataclass
class StoredMessage:
    """One history entry: the chat message the model sees, and what only crow and the editor need."""

    message: dict[str, Any]
    meta: EntryMeta = field(default_factory=EntryMeta)
    active: bool = True
    """False once compaction archived it: replayed to the editor, never sent to the model."""
    row_id: int | None = None
    """The entry's number within its session, given by the session before it is stored."""
    order: int = 0
    """Where the store put it among all sessions' messages (0 until read back): multi-agent replay order."""


__all__ = [
    "ATTACHMENTS",
    "Attachment",
    "EntryKind",
    "EntryMeta",
    "Handoff",
    "StoredMessage",
    "ToolDisplay",
    "attachment_for",
    "attachments",
    "without_attachments",
]
