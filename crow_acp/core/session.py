"""A session's state and the edits that keep its history valid (compaction, answering open calls).

    Conversation  what the store keeps and a load brings back: id, cwd, history, data, title
    Session       a Conversation open in this process, with its runtime handles: store, model, MCP
                  servers, the editor's client, local tools and commands, and TurnControl (the lock
                  and the cancel scope of its prompts)

What callbacks get of it is SessionAccess (plugin/session.py; SessionView here), a narrow view.

A client's system prompt (ACP `systemPrompt`, schema 1.30) goes over crow's own. The editor may give a
session system-level instructions on session/new, load, resume and fork: `append` adds them after
crow's own system prompt, `override` replaces crow's own with them. They are kept in the session's data
(redacted), so a load without one keeps them and a load with one replaces them. The stored system
message stays crow's own (what the hooks set); every reader of the messages (the model requests, the
hooks, side prompts, compaction) gets the effective one, built when the messages are read, so a hook
that rebuilds crow's prompt never drops the client's."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

import anyio

from ..events import Event, Usage
from ..history import EntryMeta, StoredMessage, ToolDisplay
from ..plugin.session import SlashCommand, Tool
from ..store import SessionStore
from ..util.secrets import redact
from ..util.text import clean_meta, repair
from .steering import SteeringInbox

if TYPE_CHECKING:
    from ..model.client import ModelClient

SUMMARY_PREFIX = "This conversation was compacted. A summary of the earlier part follows.\n\n"
SUMMARY_ACK = "Understood. I will continue from this summary."
INTERRUPTED = "Interrupted: crow stopped before this tool call finished."
"""The result of a tool call a killed process or a failed turn left unanswered."""


@dataclass(eq=False)
class TurnControl:
    """One prompt at a time per session, and how session/cancel and steering reach it."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held by the running prompt (a turn or a slash command). The next ones wait on it, and asyncio's lock
    wakes them in the order they came (FIFO): queued prompts run in arrival order."""
    steering: SteeringInbox = field(default_factory=SteeringInbox)
    """Messages for the running model turn, taken at its next model call (steering.py)."""
    scope: anyio.CancelScope | None = None
    """The cancel scope of the work running now (a turn, or the wait for MCP servers)."""
    cancels: int = 0
    """How many session/cancel notifications arrived: a prompt that waited compares it to the count
    when it arrived, so a cancel also stops the prompts already queued behind the turn."""

    def cancel(self) -> None:
        self.cancels += 1
        if self.scope:
            self.scope.cancel()

    def cancelled_since(self, cancels: int) -> bool:
        return self.cancels != cancels

    @property
    def busy(self) -> bool:
        """In a prompt, or in the cancellable part of one."""
        return self.lock.locked() or self.scope is not None

    @contextmanager
    def cancellable(self) -> Iterator[anyio.CancelScope]:
        """Run the body in the scope `cancel` reaches; `.cancelled_caught` tells whether it did."""
        try:
            with anyio.CancelScope() as self.scope:
                yield self.scope
        finally:
            self.scope = None


@dataclass(eq=False, kw_only=True)
class Conversation:
    """What the store keeps of a session, and what a session/load brings back: no handle, no lock."""

    id: str
    cwd: str
    additional_directories: list[str] = field(default_factory=list)
    history: list[StoredMessage] = field(default_factory=list)
    """Active entries, in the order the model sees them."""
    data: dict[str, Any] = field(default_factory=dict)
    """Persisted session data: context, allowed (remembered answers), additional_directories, model, agent."""
    title: str | None = None
    last_row: int = 0
    """The highest row_id given to an entry of this session (archived ones included)."""

    @property
    def context(self) -> dict[str, Any]:
        context: dict[str, Any] = self.data.setdefault("context", {})
        return context

    def messages(self) -> list[dict[str, Any]]:
        """What the model sees: the history, with a client's system prompt over crow's own."""
        return with_client_prompt([entry.message for entry in self.history], self.data)


class ToolSource(Protocol):
    """Tools from outside the session, given by the layer that opens it (its MCP servers: mcp/host.py)."""

    def tools(self) -> Sequence[Tool]: ...

    async def settle(self) -> None:
        """Returns once a tool list that is changing has changed (before the next model call)."""

    def unavailable(self, tool_name: str) -> str | None:
        """Why a tool the model named is not there now (its server failed or is still starting), or None."""

    async def close(self) -> None: ...


@dataclass(eq=False, kw_only=True)
class Session(Conversation):
    """A conversation open in this process, with the runtime handles that serve it (never stored)."""

    store: SessionStore
    """Where record(), save() and the other edits below write the conversation, at once."""
    model: ModelClient
    emit: Callable[[Event], Awaitable[None]]
    mcp: ToolSource
    """The session's MCP servers (an McpHost: acp/ gets it back with McpHost.of)."""
    client: Any = None
    """The editor's connection (None in process), for permission questions and its file tools."""
    client_capabilities: Any = None
    local_tools: dict[str, Tool] = field(default_factory=dict)
    commands: dict[str, SlashCommand] = field(default_factory=dict)
    control: TurnControl = field(default_factory=TurnControl)
    last_usage: Usage | None = None
    compaction_request: str | None = None
    """Set by trigger_compaction(): the focus text ("" for none); cleared by whoever compacts."""

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
        if self.title is not None or not (title := " ".join(redact(text).split())[:80]):  # no part of a key at the cut
            return None
        self.title = title
        self.store.update(self.id, title=title)
        return title


def compact_history(session: Session, keep_last: int, summary: str, compaction_id: str | None = None) -> int:
    history = session.history
    head = 1 if history and history[0].message["role"] == "system" else 0
    cut = max(head, len(history) - max(keep_last, 1))
    while cut > head and history[cut].message["role"] != "user":
        cut -= 1
    if cut <= head:
        return 0
    old, tail = history[head:cut], history[cut:]
    new = [
        StoredMessage(
            {"role": "user", "content": SUMMARY_PREFIX + summary},
            EntryMeta("summary", message_id=compaction_id, replaced=len(old)),
        ),
        # Strict chat templates demand user/assistant alternation, and the kept tail starts with a user turn.
        StoredMessage({"role": "assistant", "content": SUMMARY_ACK}, EntryMeta("ack")),
        *(StoredMessage(entry.message, entry.meta.with_copy()) for entry in tail),
    ]
    # One transaction: a kill mid-compaction leaves the old history or the new one, never half of each.
    session.store.compact(
        session.id, [e.row_id for e in old + tail if e.row_id is not None], [session.numbered(e) for e in new]
    )
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


# ---- A client's system prompt ----

CLIENT_PROMPT = "client_system_prompt"
"""Where the session's data keeps it: {"mode": "append" | "override", "text": str}."""
SEPARATOR = "\n\n"

Mode = Literal["append", "override"]


@dataclass(frozen=True)
class ClientPrompt:
    mode: Mode
    text: str

    def to_json(self) -> dict[str, str]:
        return {"mode": self.mode, "text": self.text}

    @classmethod
    def stored(cls, value: Any) -> ClientPrompt | None:
        """The prompt a session's data keeps; None when there is none (or it is not one crow wrote)."""
        if isinstance(value, dict) and value.get("mode") in ("append", "override"):
            if isinstance(text := value.get("text"), str):
                return cls(value["mode"], text)
        return None


def with_client_prompt(messages: list[dict[str, Any]], data: dict[str, Any]) -> list[dict[str, Any]]:
    """`messages` with the effective system message first (unchanged when the client gave none)."""
    prompt = ClientPrompt.stored(data.get(CLIENT_PROMPT))
    if prompt is None:
        return messages
    has_own = bool(messages) and messages[0]["role"] == "system"
    rest = messages[1:] if has_own else messages
    own = messages[0].get("content") if has_own else None
    if prompt.mode == "override" or not isinstance(own, str) or not own.strip():
        text = prompt.text
    else:
        text = own + SEPARATOR + prompt.text
    return [{"role": "system", "content": text}, *rest]
