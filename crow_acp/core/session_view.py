"""SessionView: crow's SessionAccess over a live session (session.py).

What each method promises is declared, with its docstring, in the seam it implements:
crow_acp/plugin/session.py. Never the agent or the connection.
"""

from __future__ import annotations

import json
import uuid
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..events import (
    PLAN_ID,
    ActivityReported,
    CompactionReported,
    CompactionStatus,
    NoticeRaised,
    NoticeSeverity,
    PlanEntry,
    PlanRemoved,
    PlanUpdated,
    ToolCallUpdated,
    ToolKind,
    ToolStatus,
    Usage,
    UsageChanged,
)
from ..history import EntryMeta, StoredMessage
from ..plugin.blackboard import SessionBlackboard, plain_json
from ..plugin.session import SessionAccess, SlashCommand, Tool
from ..telemetry import gen_ai, spans
from ..util.text import clean_value
from .session import compact_history

if TYPE_CHECKING:
    from .session import Session


BLACKBOARD = "blackboard"
_BOARDS: weakref.WeakKeyDictionary[Session, SessionBlackboard] = weakref.WeakKeyDictionary()
"""One board per session, so every SessionView of it hands out the same object."""


def _board_of(session: weakref.ref[Session]) -> SessionBlackboard:
    """The board of a session it does not keep alive (the cache above is keyed by that session)."""

    def load() -> Any:
        return alive.context.get(BLACKBOARD) if (alive := session()) is not None else None

    def store(data: dict[str, Any]) -> None:
        if (alive := session()) is not None:
            alive.context[BLACKBOARD] = data  # in a MultiAgent, every member's session is saved here
            alive.save()

    return SessionBlackboard(load, store)


class SessionView(SessionAccess):
    """A live session as a callback, a tool or a slash command sees it."""

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
        copies: list[dict[str, Any]] = json.loads(json.dumps(self._s.messages()))
        return copies

    def get_context(self, key: str, default: Any = None) -> Any:
        """The value stored under `key`, else `default`. For "blackboard" it is the board itself (see
        `blackboard`), also before anything was written, unless an explicit default is given."""
        value = self._s.context.get(key, default)
        if key == BLACKBOARD and (isinstance(value, dict) or value is None):
            return self.blackboard
        return value

    @property
    def blackboard(self) -> SessionBlackboard:
        """The session's blackboard (in a MultiAgent, shared by every member): a mapping of JSON values
        that stores every change, nested ones included, before the editor's next update."""
        board = _BOARDS.get(self._s)
        if board is None:
            board = _BOARDS[self._s] = _board_of(weakref.ref(self._s))
        return board

    @blackboard.setter
    def blackboard(self, value: Any) -> None:
        if value is not self.blackboard:  # `session.blackboard |= {...}` assigns the board to itself
            self.set_context(BLACKBOARD, value)

    def get_summary(self) -> str:
        """What the agent concluded: the text of the last assistant message of the latest turn.

        Tool calls, tool output and reasoning are never part of it. If the last assistant message
        has no text, the texts of the latest turn's assistant messages are joined instead.
        """
        turn: list[str] = []
        for message in reversed(self._s.messages()):
            if message["role"] == "user":
                break
            if message["role"] == "assistant" and isinstance(content := message.get("content"), str) and content:
                turn.insert(0, content)
                if not message.get("tool_calls"):
                    return content
        return "\n\n".join(turn)

    def tool_names(self) -> list[str]:
        return [tool.name for tool in self._s.tools()]

    # Write
    def add_message(
        self, role: str, content: str, *, hidden: bool = False, skill: str | None = None, **other: Any
    ) -> None:
        """Append a message the next model call sees; it is persisted at once.

        hidden: for the model only, never replayed to the editor (an injection). skill: the skill
        whose text it is. Other keywords are the caller's own JSON-serializable metadata, stored with it.
        """
        json.dumps(other)  # fail here, with the caller on the stack, not later in the store
        meta = EntryMeta(kind="injected" if hidden else "message", skill=skill, other=other)
        self._s.record({"role": role, "content": content}, meta)

    def set_context(self, key: str, value: Any) -> None:
        """Store a copy of a JSON value with the session; it survives restarts. NotJsonError (a TypeError)
        says which part is not JSON, here, with the caller on the stack, not later in the store."""
        self._s.context[key] = plain_json(value, f"context[{key!r}]")
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

    def compact_messages(self, keep_last: int, summary: str, compaction_id: str | None = None) -> int:
        """Replace all but the last `keep_last` messages (and the system message) with `summary`.

        The cut moves back to the nearest user message, so an assistant tool call is never split
        from its results. The old messages stay in the store for replay. Returns how many
        messages were replaced (0 when there is nothing older than the kept tail).
        """
        return compact_history(self._s, keep_last, summary, compaction_id)

    async def report(
        self,
        title: str,
        *,
        status: ToolStatus = "completed",
        kind: ToolKind = "other",
        text: str | None = None,
        activity_id: str | None = None,
        notice: NoticeSeverity | None = None,
    ) -> str:
        """Show progress in the editor as a tool call; reuse the returned id to update it."""
        activity_id = activity_id or f"crow-{uuid.uuid4().hex[:12]}"
        report = ActivityReported(self._s.id, activity_id, title, status, kind, text)
        await self._s.emit(report if notice is None else NoticeRaised(self._s.id, notice, title, text, report))
        return activity_id

    async def notice(self, title: str, *, description: str | None = None, severity: NoticeSeverity = "warning") -> None:
        await self._s.emit(NoticeRaised(self._s.id, severity, title, description))

    async def report_compaction(
        self,
        status: CompactionStatus,
        *,
        title: str,
        text: str | None = None,
        summary: str | None = None,
        compaction_id: str | None = None,
    ) -> str:
        compaction_id = compaction_id or f"compaction-{uuid.uuid4().hex[:12]}"
        if spans.on:
            gen_ai.compaction(compaction_id, status)  # its span: from in_progress to the end report
        await self._s.emit(CompactionReported(self._s.id, compaction_id, status, title, text, summary))
        return compaction_id

    async def report_usage(self, used: int) -> None:
        """Tell the editor how full the context is now, when it changed without a model call (compaction)."""
        from ..model.costs import total

        await self._s.emit(UsageChanged(self._s.id, used, self.context_window, total(self._s)))

    async def update_tool_call(self, call_id: str, content: list[Any]) -> None:
        """Show a running tool call's content now (e.g. its live terminal); replaces earlier content."""
        await self._s.emit(ToolCallUpdated(self._s.id, call_id, list(content)))

    async def update_plan(
        self, entries: list[PlanEntry], *, plan_id: str = PLAN_ID, markdown: str | None = None, path: str | None = None
    ) -> None:
        """Show the whole plan `plan_id` in the editor: `entries`, or a Markdown plan (in the file `path`)."""
        await self._s.emit(PlanUpdated(self._s.id, tuple(entries), plan_id, markdown, path))

    async def remove_plan(self, plan_id: str = PLAN_ID) -> None:
        """The plan is abandoned: the editor stops showing it."""
        await self._s.emit(PlanRemoved(self._s.id, plan_id))
