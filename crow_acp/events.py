"""Typed events the loop emits; observers receive them in order.

The ACP update stream is one observer (acp_updates.AcpUpdates). Users attach their own with
AcpAgent.add_observer(fn), for logging and metrics: these are the seeds' onText / onToolUse /
onAgentEnd / onError.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"]
ToolStatus = Literal["pending", "in_progress", "completed", "failed"]
NoticeSeverity = Literal["info", "warning", "error"]
CompactionStatus = Literal["in_progress", "completed", "failed", "cancelled"]


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    """Every input token of the call, cached ones included (what fills the context window)."""
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    """Of prompt_tokens, those read from the provider's prompt cache (priced at cache_read_price)."""
    cache_write_tokens: int = 0
    """Of prompt_tokens, those written to the cache (Anthropic; priced at cache_write_price)."""

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Cost:
    """A session's cumulative spend (from the profile's prices)."""

    amount: float
    currency: str


@dataclass(frozen=True)
class ToolView:
    """How a tool call looks in the editor."""

    title: str
    kind: ToolKind = "other"
    locations: tuple[str, ...] = ()


@dataclass
class ToolResult:
    """What a tool returns: text for the model, and optionally richer ACP content for the editor."""

    text: str
    is_error: bool = False
    content: list[Any] | None = None
    """ACP tool-call content (diff, terminal, content blocks); None shows `text`."""
    raw_output: Any = None
    images: list[tuple[str, str]] = field(default_factory=list)
    """Images for the model as (mime type, base64 data); a vision model sees them after the results."""


@dataclass(frozen=True)
class TextDelta:
    session_id: str
    message_id: str
    text: str


@dataclass(frozen=True)
class ThoughtDelta:
    session_id: str
    message_id: str
    text: str


@dataclass(frozen=True)
class ToolCallStarted:
    """The model asked for a tool; status pending, before any permission prompt."""

    session_id: str
    call_id: str
    name: str
    arguments: dict[str, Any]
    view: ToolView


@dataclass(frozen=True)
class ToolCallRunning:
    session_id: str
    call_id: str


@dataclass(frozen=True)
class ToolCallFinished:
    session_id: str
    call_id: str
    name: str
    result: ToolResult
    status: ToolStatus = "completed"


@dataclass(frozen=True)
class ModelCallFinished:
    session_id: str
    usage: Usage
    finish_reason: str | None
    context_window: int
    cost: Cost | None = None
    model: str = ""
    """The model id the call was sent to (the session's profile may change between calls)."""


@dataclass(frozen=True)
class UsageChanged:
    """The context's size changed without a model call (compaction)."""

    session_id: str
    used: int
    context_window: int
    cost: Cost | None = None


@dataclass(frozen=True)
class TurnFinished:
    session_id: str
    stop_reason: str


@dataclass(frozen=True)
class ErrorOccurred:
    session_id: str
    message: str
    error: BaseException | None = field(default=None, compare=False)


@dataclass(frozen=True)
class ActivityReported:
    """Progress a callback shows the editor as a tool call (compaction, skills, hand-offs)."""

    session_id: str
    activity_id: str
    title: str
    status: ToolStatus
    kind: ToolKind = "other"
    text: str | None = None


@dataclass(frozen=True)
class ToolCallUpdated:
    """A running tool's intermediate content, e.g. the editor terminal it runs in (shown live)."""

    session_id: str
    call_id: str
    content: list[Any]


@dataclass(frozen=True)
class TitleChanged:
    session_id: str
    title: str


@dataclass(frozen=True)
class PlanEntry:
    """One step of a plan as the editor shows it (ACP has no "blocked": callers mark it in the text)."""

    content: str
    status: Literal["pending", "in_progress", "completed"] = "pending"
    priority: Literal["high", "medium", "low"] = "medium"


PLAN_ID = "plan"
"""The id of the plan `write_plan` keeps (ACP plan operations name each plan of a session)."""


@dataclass(frozen=True)
class PlanUpdated:
    """The whole current plan: an ACP plan update replaces the editor's plan, it does not patch it."""

    session_id: str
    entries: tuple[PlanEntry, ...]
    plan_id: str = PLAN_ID
    """Stable for one plan of the session: an update with the same id replaces it."""
    markdown: str | None = None
    """A Markdown plan instead of entries (shown only to editors that opted into plan operations)."""
    path: str | None = None
    """The absolute path of the file a Markdown plan is in, if it is one."""


@dataclass(frozen=True)
class PlanRemoved:
    """A plan was abandoned: the editor stops showing it (legacy editors get an empty plan)."""

    session_id: str
    plan_id: str = PLAN_ID


@dataclass(frozen=True)
class CommandsChanged:
    """The slash commands on offer changed (an MCP server came up or changed its prompts)."""

    session_id: str
    commands: tuple[Any, ...]
    """SlashCommand objects, in the order the editor lists them."""


@dataclass(frozen=True)
class NoticeRaised:
    """A warning of crow's own for the user (an MCP server died, a model retry, a lease lost...).

    Never part of the history. A client that opted into notices gets it as a `notice`; any other
    gets `instead`, the view it had before notices existed (None: nothing, only the log)."""

    session_id: str
    severity: NoticeSeverity
    title: str
    description: str | None = None
    instead: ActivityReported | None = None


@dataclass(frozen=True)
class CompactionReported:
    """A compaction's progress, one id per compaction; `summary` comes with its `completed` report.

    A client that opted into compaction updates gets them; any other a tool call titled `title`
    showing `text` (cancelled shows as failed)."""

    session_id: str
    compaction_id: str
    status: CompactionStatus
    title: str
    text: str | None = None
    summary: str | None = None


@dataclass(frozen=True)
class ToolCallWaiting:
    """A running tool call waits for the user's answer to `question` (an elicitation); None: answered, it runs on."""

    session_id: str
    call_id: str
    question: str | None


Event = (
    TextDelta
    | ThoughtDelta
    | ToolCallStarted
    | ToolCallRunning
    | ToolCallFinished
    | ModelCallFinished
    | UsageChanged
    | TurnFinished
    | ErrorOccurred
    | ActivityReported
    | TitleChanged
    | ToolCallUpdated
    | PlanUpdated
    | PlanRemoved
    | CommandsChanged
    | NoticeRaised
    | CompactionReported
    | ToolCallWaiting
)
Observer = Callable[[Event], Awaitable[None] | None]
