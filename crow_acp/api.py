"""The plugin-facing API of crow, in one place: what a callback, a tool or a slash command is given and returns.

    CrowCallbacks     the hook lists; a callback is `async def cb(session: SessionAccess, **kwargs)`
      begin_session   once per new or loaded session               BeginSessionArgs
      pre_request     before every model call                      PreRequestArgs
      post_response   after every model response                   PostResponseArgs
      before_tool     before each tool call, before permission     BeforeToolArgs  -> ToolDecision | None
      after_tool      after each tool call, before it is recorded  AfterToolArgs   -> ToolResult | str | None
      end_turn        once per prompt, also after cancel or error  EndTurnArgs
      end_session     a session is closed, evicted, or crow stops  EndSessionArgs
    ToolDecision      what before_tool returns: Allow, Refuse(reason), Rewrite(arguments), Answer(result)
    ToolCallInfo      one tool call as before_tool / after_tool see it
    SlashCommand      a `/command` the editor offers; OffersCommands: a callback that brings some
    Tool              what the model can call (FunctionTool wraps an async function); ToolContext: what a call gets
    SessionAccess     what a callback may touch: messages, context, side prompts, reports (crow_acp/core/session_access.py)
    ToolResult, ToolView, PlanEntry, Usage    the values these pass around (crow_acp/events.py)

The kwargs of a list are its TypedDict, so a typed callback reads
`async def cb(session: SessionAccess, **kwargs: Unpack[EndTurnArgs])`, and its type is the list's
Protocol (EndTurnCallback, ...). Every list passes `hook`, the list's name, so a callback in several
lists knows which one called it. A callback gets only the keywords it names, so one naming a keyword
its list never passes is refused when it is added (HookSignatureError); `**kwargs` gets them all.
How the lists run is crow_acp/core/hooks.py.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypedDict, Unpack, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from .core.hooks import HookList
from .events import PlanEntry, ToolKind, ToolResult, ToolView, Usage

if TYPE_CHECKING:
    from .core.session_access import SessionAccess
    from .tools import FunctionTool


Callback = Callable[..., Awaitable[Any] | Any]

HookName = Literal[
    "begin_session", "pre_request", "post_response", "before_tool", "after_tool", "end_turn", "end_session"
]
StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled", "error"]
"""An ACP stop reason, or "error" when the turn failed (the editor then got a JSON-RPC error)."""
EndReason = Literal["closed", "evicted", "shutdown"]


@dataclass(frozen=True)
class ToolCallInfo:
    """One tool call as a before_tool / after_tool callback sees it (the tool's own description included)."""

    id: str
    name: str
    arguments: dict[str, Any]
    """The arguments as the model sent them, or as an earlier before_tool callback rewrote them."""
    title: str
    kind: ToolKind
    read_only: bool
    """What the tool says about itself: a claim, not a proof (plan mode does not trust it alone)."""
    description: str = ""
    locations: tuple[str, ...] = ()


class BeginSessionArgs(TypedDict):
    hook: Literal["begin_session"]
    loaded: bool
    """True when the session came back from the store (session/load or resume)."""


class PreRequestArgs(TypedDict):
    hook: Literal["pre_request"]
    step: int
    """The model call's index within the turn, from 0."""


class PostResponseArgs(TypedDict):
    hook: Literal["post_response"]
    response: dict[str, Any] | None
    """The assistant message recorded (None when the model said nothing)."""
    usage: Usage | None
    finish_reason: str | None
    step: int


class BeforeToolArgs(TypedDict):
    hook: Literal["before_tool"]
    call: ToolCallInfo


class AfterToolArgs(TypedDict):
    hook: Literal["after_tool"]
    call: ToolCallInfo
    result: ToolResult
    ran: bool
    """False when no tool ran: a refusal, an Answer from before_tool, bad arguments, an unknown tool."""


class EndTurnArgs(TypedDict):
    hook: Literal["end_turn"]
    stop_reason: StopReason
    error: str | None
    command: str | None
    """The slash command's name when the prompt was one (no model turn ran), else None."""


class EndSessionArgs(TypedDict):
    hook: Literal["end_session"]
    reason: EndReason


# What a before_tool callback returns (None means Allow()).
@dataclass(frozen=True)
class Allow:
    """Let the call go on to the next step (the next guard, then the permission policy)."""


@dataclass(frozen=True)
class Refuse:
    """Do not run the call; the model gets `reason` as the tool's error result."""

    reason: str


@dataclass(frozen=True)
class Rewrite:
    """Go on with these arguments instead; later steps, the permission prompt and the tool see them."""

    arguments: dict[str, Any]


@dataclass(frozen=True)
class Answer:
    """Do not run the tool: this is its result (a cache hit, a canned reply). Nobody is asked."""

    result: ToolResult | str


ToolDecision = Allow | Refuse | Rewrite | Answer


# The shape of each list's callbacks, for annotations (the lists check each callback as it is added).
class BeginSessionCallback(Protocol):
    def __call__(self, session: SessionAccess, /, **kwargs: Unpack[BeginSessionArgs]) -> Awaitable[None] | None: ...


class PreRequestCallback(Protocol):
    def __call__(self, session: SessionAccess, /, **kwargs: Unpack[PreRequestArgs]) -> Awaitable[None] | None: ...


class PostResponseCallback(Protocol):
    def __call__(self, session: SessionAccess, /, **kwargs: Unpack[PostResponseArgs]) -> Awaitable[None] | None: ...


class BeforeToolCallback(Protocol):
    def __call__(
        self, session: SessionAccess, /, **kwargs: Unpack[BeforeToolArgs]
    ) -> Awaitable[ToolDecision | None] | ToolDecision | None: ...


class AfterToolCallback(Protocol):
    def __call__(
        self, session: SessionAccess, /, **kwargs: Unpack[AfterToolArgs]
    ) -> Awaitable[ToolResult | str | None] | ToolResult | str | None: ...


class EndTurnCallback(Protocol):
    def __call__(self, session: SessionAccess, /, **kwargs: Unpack[EndTurnArgs]) -> Awaitable[None] | None: ...


class EndSessionCallback(Protocol):
    def __call__(self, session: SessionAccess, /, **kwargs: Unpack[EndSessionArgs]) -> Awaitable[None] | None: ...



class CrowCallbacks(BaseModel):
    """The hook lists of the session lifecycle (see the module docstring for what each passes)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, validate_assignment=True, validate_default=True)

    begin_session: list[Callback] = Field(default_factory=list)
    """Once per new or loaded session, before its first prompt."""
    pre_request: list[Callback] = Field(default_factory=list)
    """Before every model call (after the user message is recorded)."""
    post_response: list[Callback] = Field(default_factory=list)
    """After every model response is recorded, before its tool calls run."""
    before_tool: list[Callback] = Field(default_factory=list)
    """Before each tool call: return Allow, Refuse, Rewrite or Answer (None is Allow). The permission
    policy runs after these unless the list holds `permission_policy` (crow_acp.core.tool_gate) elsewhere."""
    after_tool: list[Callback] = Field(default_factory=list)
    """After each tool call: return a ToolResult (or text) to replace the result, or None to keep it."""
    end_turn: list[Callback] = Field(default_factory=list)
    """Once per prompt, after the turn, before control returns to the user."""
    end_session: list[Callback] = Field(default_factory=list)
    """When a session is closed, evicted from memory, or the agent shuts down: free per-session state."""

    @field_validator("*", mode="after")
    @classmethod
    def _checked(cls, callbacks: list[Callback], info: ValidationInfo) -> HookList:
        """Each list refuses a callback that names a keyword the list never passes (HookSignatureError)."""
        name = info.field_name or ""
        return HookList(name, PASSES[name], callbacks)  # type: ignore[index]

    def check(self) -> None:
        """Check every callback again, in place (for a CrowCallbacks built without validation)."""
        for name in HOOKS:
            HookList(name, PASSES[name], getattr(self, name))

    def copy_lists(self) -> CrowCallbacks:
        """A copy with new lists (model_copy is shallow and would share them)."""
        return CrowCallbacks(**{name: list(getattr(self, name)) for name in HOOKS})

    def all(self) -> list[Callback]:
        return [callback for name in HOOKS for callback in getattr(self, name)]

    def __add__(self, other: CrowCallbacks) -> CrowCallbacks:
        return CrowCallbacks(**{name: getattr(self, name) + getattr(other, name) for name in HOOKS})


HOOKS: tuple[HookName, ...] = (
    "begin_session", "pre_request", "post_response", "before_tool", "after_tool", "end_turn", "end_session"
)
HOOK_ARGS: dict[HookName, Any] = {
    "begin_session": BeginSessionArgs, "pre_request": PreRequestArgs, "post_response": PostResponseArgs,
    "before_tool": BeforeToolArgs, "after_tool": AfterToolArgs, "end_turn": EndTurnArgs, "end_session": EndSessionArgs,
}
PASSES: dict[HookName, frozenset[str]] = {name: frozenset(args.__annotations__) for name, args in HOOK_ARGS.items()}
"""The keywords each list passes: a callback may name only these (or take **kwargs)."""


@runtime_checkable
class OffersCommands(Protocol):
    """A callback that brings slash commands: crow offers them in every session of the agent."""

    commands: Sequence[SlashCommand]


@dataclass(frozen=True)
class SlashCommand:
    """A command the editor offers after `/`; the handler runs instead of a model turn."""

    name: str
    description: str
    handler: Callable[..., Awaitable[str | None]]
    """`async def handler(session: SessionAccess, argument: str) -> str | None`; the text is shown."""
    hint: str | None = None


# Tools
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


def __getattr__(name: str) -> Any:
    """SessionAccess and FunctionTool are implemented beside what they use; they load on first use (import order)."""
    if name == "SessionAccess":
        from .core.session_access import SessionAccess

        return SessionAccess
    if name == "FunctionTool":
        from .tools import FunctionTool

        return FunctionTool
    raise AttributeError(f"module 'crow_acp.api' has no attribute {name!r}")


__all__ = [
    "HOOKS",
    "AfterToolArgs",
    "AfterToolCallback",
    "Allow",
    "Answer",
    "BeforeToolArgs",
    "BeforeToolCallback",
    "BeginSessionArgs",
    "BeginSessionCallback",
    "Callback",
    "CrowCallbacks",
    "EndReason",
    "EndSessionArgs",
    "EndSessionCallback",
    "EndTurnArgs",
    "EndTurnCallback",
    "FunctionTool",
    "HookName",
    "OffersCommands",
    "PlanEntry",
    "PostResponseArgs",
    "PostResponseCallback",
    "PreRequestArgs",
    "PreRequestCallback",
    "Refuse",
    "Rewrite",
    "SessionAccess",
    "SlashCommand",
    "StopReason",
    "Tool",
    "ToolCallInfo",
    "ToolContext",
    "ToolDecision",
    "ToolResult",
    "ToolView",
    "Usage",
]
