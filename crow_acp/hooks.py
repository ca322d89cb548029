"""The four hook lists, and how they run.

    begin_session   once per new or loaded session               kwargs: loaded (bool)
    pre_request     before every model call                      kwargs: step (int, 0-based)
    post_response   after every model response                   kwargs: response (dict), usage (Usage),
                                                                         finish_reason (str | None), step
    end_turn        once per prompt, also after cancel or error  kwargs: stop_reason (str: an ACP stop reason,
                                                                         or "error"), error (str | None)

A callback is `async def cb(session: SessionAccess, **kwargs)`; plain functions work too.
Callbacks run in list order. One that raises is logged and reported, and the turn goes on.
A callback may carry slash commands in a `commands` attribute (a list of SlashCommand, see
OffersCommands): crow offers them in every session of the agent (this is how `/compact` comes with default_compact()).
"""

from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Protocol, Sequence, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from .session import SessionAccess

log = logging.getLogger(__name__)

Callback = Callable[..., Awaitable[None] | None]


class CrowCallbacks(BaseModel):
    """Four lists of callbacks for the session lifecycle."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    begin_session: list[Callback] = Field(default_factory=list)
    """Once per new or loaded session, before its first prompt."""
    pre_request: list[Callback] = Field(default_factory=list)
    """Before every model call (after the user message is recorded)."""
    post_response: list[Callback] = Field(default_factory=list)
    """After every model response is recorded, before its tool calls run."""
    end_turn: list[Callback] = Field(default_factory=list)
    """Once per prompt, after the turn, before control returns to the user."""

    def copy_lists(self) -> CrowCallbacks:
        """A copy with new lists (model_copy is shallow and would share them)."""
        return CrowCallbacks(**{name: list(getattr(self, name)) for name in HOOKS})

    def all(self) -> list[Callback]:
        return [callback for name in HOOKS for callback in getattr(self, name)]

    def __add__(self, other: CrowCallbacks) -> CrowCallbacks:
        return CrowCallbacks(**{name: getattr(self, name) + getattr(other, name) for name in HOOKS})


HOOKS = ("begin_session", "pre_request", "post_response", "end_turn")


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


async def call_user_code(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> BaseException | None:
    """Run one user callback or observer; its failure is returned, not raised, so the turn goes on."""
    try:
        result = fn(*args, **kwargs)
        if inspect.isawaitable(result):
            await result
    except Exception as exc:  # user code is a trust boundary: report it and carry on
        log.exception("callback %s failed", getattr(fn, "__qualname__", fn))
        return exc
    return None


async def run_hooks(callbacks: list[Callback], session: SessionAccess, **kwargs: Any) -> None:
    for callback in list(callbacks):
        if error := await call_user_code(callback, session, **kwargs):
            name = getattr(callback, "__qualname__", type(callback).__name__)
            await session.report(f"Callback {name} failed", status="failed", text=f"{type(error).__name__}: {error}")
