"""The hook lists: what each passes its callbacks (a TypedDict) and what shape a callback has (a
Protocol), CrowCallbacks that holds them, and the check that refuses a callback naming a keyword
its list never passes, when it is added. How the lists run is crow_acp/core/hooks.py.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Literal, Protocol, Self, SupportsIndex, TypedDict, Unpack, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from ..errors import HookSignatureError
from ..events import ToolResult, Usage
from .decisions import ToolCallInfo, ToolDecision
from .session import SessionAccess, SlashCommand

Callback = Callable[..., Awaitable[Any] | Any]

HookName = Literal[
    "begin_session", "pre_request", "post_response", "before_tool", "after_tool", "end_turn", "end_session"
]
StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled", "error"]
"""An ACP stop reason, or "error" when the turn failed (the editor then got a JSON-RPC error)."""
EndReason = Literal["closed", "evicted", "shutdown"]


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
    "begin_session",
    "pre_request",
    "post_response",
    "before_tool",
    "after_tool",
    "end_turn",
    "end_session",
)
HOOK_ARGS: dict[HookName, Any] = {
    "begin_session": BeginSessionArgs,
    "pre_request": PreRequestArgs,
    "post_response": PostResponseArgs,
    "before_tool": BeforeToolArgs,
    "after_tool": AfterToolArgs,
    "end_turn": EndTurnArgs,
    "end_session": EndSessionArgs,
}
PASSES: dict[HookName, frozenset[str]] = {name: frozenset(args.__annotations__) for name, args in HOOK_ARGS.items()}
"""The keywords each list passes: a callback may name only these (or take **kwargs)."""


@runtime_checkable
class OffersCommands(Protocol):
    """A callback that brings slash commands: crow offers them in every session of the agent."""

    commands: Sequence[SlashCommand]


def qualified_name(fn: Any) -> str:
    named = fn if hasattr(fn, "__qualname__") else type(fn)
    return f"{getattr(named, '__module__', '?')}.{named.__qualname__}"


def refusal(fn: Any, hook: str, passes: frozenset[str]) -> str | None:
    """Why `fn` cannot be called as a callback of a list that passes these keywords; None if it can.

    Crow passes only the keywords a callback names, so a misspelled one would silently never come:
    it is refused instead, when the callback is added."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # no signature to read (some builtins): it gets every keyword
        return None
    if not parameters:
        return "it takes no parameter for the session"
    for index, p in enumerate(parameters):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or (index == 0 and p.kind is not p.KEYWORD_ONLY):
            continue  # the session, and whatever *args / **kwargs take
        if p.kind is p.POSITIONAL_ONLY and p.default is p.empty:
            return f"its positional-only parameter {p.name!r} is never given by {hook}"
        if p.kind is not p.POSITIONAL_ONLY and p.name not in passes:
            return f"it names the keyword parameter {p.name!r}, which {hook} never passes"
    return None


def check_callback(fn: Any, hook: str, passes: frozenset[str]) -> None:
    if (reason := refusal(fn, hook, passes)) is not None:
        raise HookSignatureError(
            f"{qualified_name(fn)} cannot be added to {hook}: {reason}. {hook} passes the session and "
            f"{', '.join(sorted(passes))}; a callback that takes **kwargs gets them all."
        )


class HookList(list[Any]):
    """One hook list: a list that checks each callback as it is added (append, insert, extend, +=, [i] =)."""

    def __init__(self, hook: str, passes: frozenset[str], callbacks: Iterable[Any] = ()) -> None:
        super().__init__()
        self.hook, self.passes = hook, passes
        self.extend(callbacks)

    def _checked(self, callbacks: Iterable[Any]) -> list[Any]:
        checked = list(callbacks)
        for fn in checked:
            check_callback(fn, self.hook, self.passes)
        return checked

    def append(self, fn: Any) -> None:
        super().append(self._checked([fn])[0])

    def insert(self, index: SupportsIndex, fn: Any) -> None:
        super().insert(index, self._checked([fn])[0])

    def extend(self, callbacks: Iterable[Any]) -> None:
        super().extend(self._checked(callbacks))

    def __iadd__(self, callbacks: Iterable[Any]) -> Self:  # type: ignore[misc]
        self.extend(callbacks)
        return self

    def __setitem__(self, index: Any, value: Any) -> None:
        super().__setitem__(index, self._checked(value) if isinstance(index, slice) else self._checked([value])[0])
