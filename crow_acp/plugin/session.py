"""What a callback, a tool or a slash command gets: SessionAccess, and the Tool and SlashCommand it may add.

Never the agent or the connection: messages, context, side prompts, compaction and reports to the
editor. This is the declared seam; crow_acp.core.session_view.SessionView is crow's implementation
(over a live session), and tests may bring their own.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import anyio

from ..events import (
    PLAN_ID,
    CompactionStatus,
    NoticeSeverity,
    PlanEntry,
    ToolKind,
    ToolResult,
    ToolStatus,
    ToolView,
    Usage,
)
from ..history import StoredMessage
from .blackboard import SessionBlackboard


@runtime_checkable
class SessionAccess(Protocol):
    """What a callback may touch: never the agent or the connection."""

    @property
    def session_id(self) -> str: ...
    @property
    def cwd(self) -> str: ...
    @property
    def additional_directories(self) -> list[str]: ...
    @property
    def last_usage(self) -> Usage | None:
        """Token counts the provider reported for the last model call."""

    @property
    def context_window(self) -> int: ...
    @property
    def compaction_requested(self) -> str | None:
        """The focus text of a pending trigger_compaction() ("" without focus), or None."""

    @property
    def model_name(self) -> str:
        """The model id the session's calls go to."""

    # Read
    def entries(self) -> Sequence[StoredMessage]:
        """The live history (each entry's .message and .meta), without copying: for per-call checks
        that must not cost O(history). Read-only; compaction replaces the list, so compare identity."""

    def get_messages(self) -> list[dict[str, Any]]:
        """Copies of the messages the next model call will see."""

    def get_context(self, key: str, default: Any = None) -> Any:
        """The value stored under `key`, else `default`. For "blackboard" it is the board itself (see
        `blackboard`), also before anything was written, unless an explicit default is given."""

    @property
    def blackboard(self) -> SessionBlackboard:
        """The session's blackboard (in a MultiAgent, shared by every member): a mapping of JSON values
        that stores every change, nested ones included, before the editor's next update."""

    @blackboard.setter
    def blackboard(self, value: Any) -> None: ...
    def get_summary(self) -> str:
        """What the agent concluded: the text of the last assistant message of the latest turn.

        Tool calls, tool output and reasoning are never part of it. If the last assistant message
        has no text, the texts of the latest turn's assistant messages are joined instead.
        """

    def tool_names(self) -> list[str]: ...

    # Write
    def add_message(
        self, role: str, content: str, *, hidden: bool = False, skill: str | None = None, **other: Any
    ) -> None:
        """Append a message the next model call sees; it is persisted at once.

        hidden: for the model only, never replayed to the editor (an injection). skill: the skill
        whose text it is. Other keywords are the caller's own JSON-serializable metadata, stored with it.
        """

    def set_context(self, key: str, value: Any) -> None:
        """Store a copy of a JSON value with the session; it survives restarts. NotJsonError (a TypeError)
        says which part is not JSON, here, with the caller on the stack, not later in the store."""

    def set_system_prompt(self, text: str) -> None:
        """Replace the system message (the first message), or insert it."""

    def add_tool(self, tool: Tool) -> None:
        """Offer a tool to the model from the next call on (crow's own tools, load_skill, plans)."""

    def add_command(self, command: SlashCommand) -> None:
        """Offer a slash command to the editor; available_commands_update follows."""

    # Control
    async def prompt(self, text: str, *, history: bool = False, system: str | None = None) -> str:
        """A side call to the model; the session history is left alone."""

    def trigger_compaction(self, focus: str = "") -> None:
        """Ask the compaction callback to compact at the next safe point."""

    def take_compaction_request(self) -> str | None:
        """For the compaction callback: the pending request's focus ("" without one), now cleared."""

    def compact_messages(self, keep_last: int, summary: str, compaction_id: str | None = None) -> int:
        """Replace all but the last `keep_last` messages (and the system message) with `summary`.

        The cut moves back to the nearest user message, so an assistant tool call is never split
        from its results. The old messages stay in the store for replay. Returns how many
        messages were replaced (0 when there is nothing older than the kept tail). `compaction_id`
        is the id its `report_compaction` calls used: a load replays it as the same compaction.
        """

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
        """Show progress in the editor as a tool call; reuse the returned id to update it.

        With `notice`, the report is a warning of that severity: a client that opted into notices
        gets it as a `notice` (title and text) instead of the tool call."""

    async def notice(self, title: str, *, description: str | None = None, severity: NoticeSeverity = "warning") -> None:
        """Warn the user, outside the history: a `notice` to a client that opted into notices, nothing to others."""

    async def report_compaction(
        self,
        status: CompactionStatus,
        *,
        title: str,
        text: str | None = None,
        summary: str | None = None,
        compaction_id: str | None = None,
    ) -> str:
        """Show a compaction's progress; reuse the returned id for its later reports.

        A client that opted into compaction updates gets `compaction_update` (and `summary`, given
        with `completed`, as `compaction_summary_chunk`); any other a tool call titled `title`
        showing `text` (cancelled shows as failed)."""

    async def report_usage(self, used: int) -> None:
        """Tell the editor how full the context is now, when it changed without a model call (compaction)."""

    async def update_tool_call(self, call_id: str, content: list[Any]) -> None:
        """Show a running tool call's content now (e.g. its live terminal); replaces earlier content."""

    async def update_plan(
        self, entries: list[PlanEntry], *, plan_id: str = PLAN_ID, markdown: str | None = None, path: str | None = None
    ) -> None:
        """Show the whole plan `plan_id` in the editor (an update replaces it): `entries`, or a Markdown plan
        (`path`: the absolute path of its file, if any) that only editors with plan operations show."""

    async def remove_plan(self, plan_id: str = PLAN_ID) -> None:
        """The plan is abandoned: the editor stops showing it (an editor without plan operations gets an empty plan)."""


@dataclass(frozen=True)
class SlashCommand:
    """A command the editor offers after `/`; the handler runs instead of a model turn."""

    name: str
    description: str
    handler: Callable[..., Awaitable[str | None]]
    """`async def handler(session: SessionAccess, argument: str) -> str | None`; the text is shown."""
    hint: str | None = None


@dataclass(frozen=True)
class Sandbox:
    """How a local command runs, as the permission policy decided it (crow_acp/editor/sandbox.py builds it)."""

    level: Literal["workspace", "read_only", "off"] = "workspace"
    """workspace: the roots and `writable` are writable; read_only: nothing is; off: no sandbox (the user chose it)."""
    network: bool = False
    writable: tuple[str, ...] = ()
    """Paths writable besides the roots."""
    hidden: tuple[str, ...] = ()
    """Paths made invisible besides crow's home and the usual secret stores, which always are."""
    max_processes: int = 256
    cpu_seconds: int = 300
    memory_mb: int = 4096
    protected: tuple[str, ...] = ()
    """Patterns below the writable roots bound read-only (config/protected.py: the list write_file asks for)."""
    home_visible: tuple[str, ...] = ()
    """Paths below $HOME shown read-only besides the toolchain directories (editor/sandbox_fs.py)."""

    def describe(self) -> str:
        """What the permission question and the mode say about it."""
        if self.level == "off":
            return "outside the sandbox"
        writes = "the workspace writable" if self.level == "workspace" else "read-only"
        return f"sandboxed: {writes}, {'with' if self.network else 'no'} network"


class ToolTimer:
    """The loop's time limit on one tool call, which time spent waiting for the user does not count against
    (an MCP server's question in the middle of the call): `paused()` stops it, and gives back what was left."""

    def __init__(self, scope: anyio.CancelScope | None = None) -> None:
        self.scope = scope
        self._pauses = 0
        self._left = 0.0

    @contextmanager
    def paused(self) -> Iterator[None]:
        if self.scope is None:
            yield
            return
        if self._pauses == 0:  # the first of overlapping waits stops the clock; the last one restarts it
            self._left = max(self.scope.deadline - anyio.current_time(), 0.0)
            self.scope.deadline = math.inf
        self._pauses += 1
        try:
            yield
        finally:
            self._pauses -= 1
            if self._pauses == 0:
                self.scope.deadline = anyio.current_time() + self._left


@dataclass
class ToolContext:
    """What a running tool may use: the session view, and the editor client when one is attached."""

    session: SessionAccess
    call_id: str
    client: Any = None
    """The ACP client connection (fs/*, terminal/*), or None when crow runs without an editor."""
    client_capabilities: Any = None
    write_targets: frozenset[str] | None = None
    """The real paths the permission policy checked for this call's edits: a write tool writes only
    those, so a symlink swapped in after the check cannot send it elsewhere (None: nothing checked)."""
    sandbox: Sandbox = Sandbox()
    """How a local command of this call runs; unless the permission policy decided otherwise, sandboxed."""
    timer: ToolTimer = field(default_factory=ToolTimer)
    """The loop's limit on this call; a tool pauses it while the user answers a question."""


class Tool(Protocol):
    name: str
    description: str
    parameters: dict[str, Any]
    read_only: bool
    timeout: float | None
    """Seconds the loop allows a call; None means the configured tool timeout."""

    def view(self, arguments: dict[str, Any]) -> ToolView: ...

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult: ...

    async def preview(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult | None:
        """What a call would do, without doing it (None: nothing to show). Its content (a diff) goes
        into the permission request; an error result ends the call before anyone is asked."""
