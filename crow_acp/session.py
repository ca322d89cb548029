"""A session's state, and SessionAccess: the narrow view callbacks get."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .events import (
    ActivityReported,
    Event,
    PlanEntry,
    PlanUpdated,
    ToolCallUpdated,
    ToolKind,
    ToolStatus,
    Usage,
    UsageChanged,
)
from .history import EntryMeta, StoredMessage, ToolDisplay
from .hooks import SlashCommand
from .mcp_host import McpHost
from .store import SessionStore
from .text_repair import clean_meta, clean_value, repair
from .tools import Tool

if TYPE_CHECKING:
    import anyio

    from .llm import ModelClient

SUMMARY_PREFIX = "This conversation was compacted. A summary of the earlier part follows.\n\n"
SUMMARY_ACK = "Understood. I will continue from this summary."


@dataclass(eq=False)
class Session:
    id: str
    cwd: str
    store: SessionStore
    model: ModelClient
    emit: Callable[[Event], Awaitable[None]]
    mcp: McpHost
    additional_directories: list[str] = field(default_factory=list)
    history: list[StoredMessage] = field(default_factory=list)
    """Active entries, in the order the model sees them."""
    data: dict[str, Any] = field(default_factory=dict)
    """Persisted session data: context, allowed_tools, additional_directories, model, agent."""
    title: str | None = None
    local_tools: dict[str, Tool] = field(default_factory=dict)
    commands: dict[str, SlashCommand] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    scope: anyio.CancelScope | None = None
    cancels: int = 0
    """How many session/cancel notifications arrived; a waiting prompt compares it to decide."""
    last_usage: Usage | None = None
    compaction_request: str | None = None
    """Set by trigger_compaction(): the focus text ("" for none); cleared by whoever compacts."""
    client: Any = None
    client_capabilities: Any = None
    last_row: int = 0
    """The highest row_id given to an entry of this session (archived ones included)."""

    @property
    def context(self) -> dict[str, Any]:
        return self.data.setdefault("context", {})

    @property
    def allowed_tools(self) -> list[str]:
        return self.data.setdefault("allowed_tools", [])

    def messages(self) -> list[dict[str, Any]]:
        return [entry.message for entry in self.history]

    def tools(self) -> list[Tool]:
        return [*self.local_tools.values(), *self.mcp.tools()]

    def record(self, message: dict[str, Any], meta: EntryMeta | None = None) -> StoredMessage:
        """Append a message to the history and the store at once."""
        repair(message)  # tool results, MCP text and callbacks' messages reach the store valid
        entry = self.numbered(StoredMessage(message, clean_meta(meta or EntryMeta())))
        self.store.append(self.id, entry)  # queued at once, in order; never blocks (see crow_acp/store)
        self.history.append(entry)
        return entry

    def numbered(self, entry: StoredMessage) -> StoredMessage:
        """Give `entry` the session's next row_id: the session numbers its own entries, so a write
        needs no round trip to the store (one process writes a session at a time: the lease)."""
        self.last_row += 1
        entry.row_id = self.last_row
        return entry

    def update_meta(self, entry: StoredMessage, meta: EntryMeta) -> None:
        """Change an entry's metadata in memory and in the store at once."""
        entry.meta = meta = clean_meta(meta)
        if entry.row_id is not None:
            self.store.update_message(self.id, entry.row_id, extra=meta.to_json())

    def rewrite(self, entry: StoredMessage, message: dict[str, Any], meta: EntryMeta) -> None:
        """Replace a recorded entry's message and metadata in memory and in the store at once."""
        repair(message)
        entry.message, entry.meta = message, clean_meta(meta)
        if entry.row_id is not None:
            self.store.update_message(self.id, entry.row_id, message=message, extra=entry.meta.to_json())

    def save(self) -> None:
        self.store.update(self.id, data=self.data)

    def take_title(self, text: str) -> str | None:
        """Name the session after its first prompt; returns the title when this call set it."""
        if self.title is not None or not (title := " ".join(text.split())[:80]):
            return None
        self.title = title
        self.store.update(self.id, title=title)
        return title


class SessionAccess:
    """What a callback may touch: never the agent or the connection."""

    def __init__(self, session: Session) -> None:
        self._s = session

    @property
    def session_id(self) -> str:
        return self._s.id

    @property
    def cwd(self) -> str:
        return self._s.cwd

    @property
    def additional_directories(self) -> list[str]:
        return list(self._s.additional_directories)

    @property
    def last_usage(self) -> Usage | None:
        """Token counts the provider reported for the last model call."""
        return self._s.last_usage

    @property
    def context_window(self) -> int:
        return self._s.model.profile.context_window

    @property
    def compaction_requested(self) -> str | None:
        """The focus text of a pending trigger_compaction() ("" without focus), or None."""
        return self._s.compaction_request

    @property
    def model_name(self) -> str:
        """The model id the session's calls go to."""
        return self._s.model.profile.model

    # Read
    def entries(self) -> Sequence[StoredMessage]:
        """The live history (each entry's .message and .meta), without copying: for per-call checks
        that must not cost O(history). Read-only; compaction replaces the list, so compare identity."""
        return self._s.history

    def get_messages(self) -> list[dict[str, Any]]:
        """Copies of the messages the next model call will see."""
        return json.loads(json.dumps(self._s.messages()))

    def get_context(self, key: str, default: Any = None) -> Any:
        return self._s.context.get(key, default)

    def get_summary(self) -> str:
        """What the agent concluded: the text of the last assistant message of the latest turn.

        Tool calls, tool output and reasoning are never part of it. If the last assistant message
        has no text, the texts of the latest turn's assistant messages are joined instead.
        """
        turn: list[str] = []
        for message in reversed(self._s.messages()):
            if message["role"] == "user":
                break
            if message["role"] == "assistant" and message.get("content"):
                turn.insert(0, message["content"])
                if not message.get("tool_calls"):
                    return message["content"]
        return "\n\n".join(turn)

    def tool_names(self) -> list[str]:
        return [tool.name for tool in self._s.tools()]

    # Write
    def add_message(self, role: str, content: str, *, hidden: bool = False, skill: str | None = None, **other: Any) -> None:
        """Append a message the next model call sees; it is persisted at once.

        hidden: for the model only, never replayed to the editor (an injection). skill: the skill
        whose text it is. Other keywords are the caller's own JSON-serializable metadata, stored with it.
        """
        json.dumps(other)  # fail here, with the caller on the stack, not later in the store
        meta = EntryMeta(kind="injected" if hidden else "message", skill=skill, other=other)
        self._s.record({"role": role, "content": content}, meta)

    def set_context(self, key: str, value: Any) -> None:
        """Store a JSON-serializable value with the session; it survives restarts."""
        json.dumps(value)  # fail here, with the caller on the stack, not later in the store
        self._s.context[key] = clean_value(value)
        self._s.save()

    def set_system_prompt(self, text: str) -> None:
        """Replace the system message (the first message), or insert it."""
        history, text = self._s.history, clean_value(text)
        if history and history[0].message["role"] == "system":
            history[0].message = {"role": "system", "content": text}
            if (row := history[0].row_id) is not None:  # every recorded entry has one
                self._s.store.update_message(self._s.id, row, message=history[0].message)
            return
        entry = self._s.numbered(StoredMessage({"role": "system", "content": text}))
        self._s.store.append(self._s.id, entry)
        self._s.store.move_first(self._s.id, entry.row_id or 0)
        history.insert(0, entry)

    def add_tool(self, tool: Tool) -> None:
        """Offer a tool to the model from the next call on (crow's own tools, load_skill, plans)."""
        self._s.local_tools[tool.name] = tool

    def add_command(self, command: SlashCommand) -> None:
        """Offer a slash command to the editor; available_commands_update follows."""
        self._s.commands[command.name] = command

    # Control
    async def prompt(self, text: str, *, history: bool = False, system: str | None = None) -> str:
        """A side call to the model; the session history is left alone."""
        messages = self._s.messages() if history else []
        if system:
            messages = [{"role": "system", "content": system}, *[m for m in messages if m["role"] != "system"]]
        return await self._s.model.complete([*messages, {"role": "user", "content": text}])

    def trigger_compaction(self, focus: str = "") -> None:
        """Ask the compaction callback to compact at the next safe point."""
        self._s.compaction_request = focus

    def take_compaction_request(self) -> str | None:
        """For the compaction callback: the pending request's focus ("" without one), now cleared."""
        request, self._s.compaction_request = self._s.compaction_request, None
        return request

    def compact_messages(self, keep_last: int, summary: str) -> int:
        """Replace all but the last `keep_last` messages (and the system message) with `summary`.

        The cut moves back to the nearest user message, so an assistant tool call is never split
        from its results. The old messages stay in the store for replay. Returns how many
        messages were replaced (0 when there is nothing older than the kept tail).
        """
        return compact_history(self._s, keep_last, summary)

    async def report(
        self,
        title: str,
        *,
        status: ToolStatus = "completed",
        kind: ToolKind = "other",
        text: str | None = None,
        activity_id: str | None = None,
    ) -> str:
        """Show progress in the editor as a tool call; reuse the returned id to update it."""
        activity_id = activity_id or f"crow-{uuid.uuid4().hex[:12]}"
        await self._s.emit(ActivityReported(self._s.id, activity_id, title, status, kind, text))
        return activity_id

    async def report_usage(self, used: int) -> None:
        """Tell the editor how full the context is now, when it changed without a model call (compaction)."""
        from .costs import total

        await self._s.emit(UsageChanged(self._s.id, used, self.context_window, total(self._s)))

    async def update_tool_call(self, call_id: str, content: list[Any]) -> None:
        """Show a running tool call's content now (e.g. its live terminal); replaces earlier content."""
        await self._s.emit(ToolCallUpdated(self._s.id, call_id, list(content)))

    async def update_plan(self, entries: list[PlanEntry]) -> None:
        """Show the whole current plan in the editor (an ACP `plan` update replaces the previous one)."""
        await self._s.emit(PlanUpdated(self._s.id, tuple(entries)))


def compact_history(session: Session, keep_last: int, summary: str) -> int:
    history = session.history
    head = 1 if history and history[0].message["role"] == "system" else 0
    cut = max(head, len(history) - max(keep_last, 1))
    while cut > head and history[cut].message["role"] != "user":
        cut -= 1
    if cut <= head:
        return 0
    old, tail = history[head:cut], history[cut:]
    new = [
        StoredMessage({"role": "user", "content": SUMMARY_PREFIX + summary}, EntryMeta("summary", replaced=len(old))),
        # Strict chat templates demand user/assistant alternation, and the kept tail starts with a user turn.
        StoredMessage({"role": "assistant", "content": SUMMARY_ACK}, EntryMeta("ack")),
        *(StoredMessage(entry.message, entry.meta.with_copy()) for entry in tail),
    ]
    # One transaction: a kill mid-compaction leaves the old history or the new one, never half of each.
    session.store.compact(session.id, [e.row_id for e in old + tail if e.row_id is not None], [session.numbered(e) for e in new])
    session.history = [*history[:head], *new]
    session.context["compaction_summary"] = summary
    session.context["compactions"] = session.context.get("compactions", 0) + 1
    session.save()
    return len(old)


def answer_open_calls(session: Session, text: str) -> None:
    """Record `text` as the result of the last reply's unanswered tool calls, so the model accepts the history.

    A turn cancelled between recording a reply and running its tools (or a killed process) leaves
    such calls. Results are recorded as each call finishes, so a gap can only be at the very end.
    """
    entries, tail = session.history, 0
    while tail < len(entries) and entries[-1 - tail].message["role"] == "tool":
        tail += 1
    if tail == len(entries) or not (calls := entries[-1 - tail].message.get("tool_calls")):
        return
    answered = {entry.message.get("tool_call_id") for entry in entries[len(entries) - tail :]}
    for call in calls if isinstance(calls, list) else ():
        if isinstance(call, dict) and isinstance(call.get("id"), str) and call["id"] not in answered:
            function = call.get("function")
            name = str((function.get("name") if isinstance(function, dict) else None) or "tool")
            session.record(
                {"role": "tool", "tool_call_id": call["id"], "content": text},
                EntryMeta(tool=ToolDisplay(name, title=name, status="failed")),
            )
