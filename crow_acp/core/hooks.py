"""How the hook lists run, and how crow calls user code (callbacks, observers) safely. What each
list is and passes is declared in plugin/hooks.py (the plugin API; users import its names from crow_acp.api).

Callbacks run in list order. One that raises is logged and reported, and the turn goes on (a
before_tool callback that raises refuses the call: a broken guard must not let a call through).
A callback may carry slash commands in a `commands` attribute (a list of SlashCommand, see
OffersCommands): crow offers them in every session of the agent (this is how `/compact` comes with default_compact()).
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..plugin.hooks import Callback, HookName
    from ..plugin.session import SessionAccess

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    """What one user callback did: its return value, or the exception it raised."""

    value: Any = None
    error: BaseException | None = field(default=None)


def callback_name(fn: Any) -> str:
    return getattr(fn, "__qualname__", type(fn).__name__)


async def call_user_code(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> BaseException | None:
    """Run one user callback or observer; its failure is returned, not raised, so the turn goes on."""
    return (await call_returning(fn, *args, **kwargs)).error


async def call_returning(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Outcome:
    try:
        result = fn(*args, **fitting(fn, kwargs))
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:  # user code is a trust boundary: report it and carry on
        log.exception("callback %s failed", callback_name(fn))
        return Outcome(error=exc)
    return Outcome(result)


def fitting(fn: Callable[..., Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments `fn` takes: all of them if it has **kwargs, else only those it names.

    So `def cb(session)` or `def cb(session, *, loaded)` works in any list, and a list that passes
    one more keyword in a later release breaks no callback that did not ask for it."""
    if not kwargs:
        return kwargs
    try:
        names = _declared(fn)
    except TypeError:  # an unhashable callable object: inspect it each time
        names = _declared.__wrapped__(fn)
    return kwargs if names is None else {key: value for key, value in kwargs.items() if key in names}


@functools.lru_cache(maxsize=1024)
def _declared(fn: Callable[..., Any]) -> frozenset[str] | None:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # no signature to read (some builtins): pass everything
        return None
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return None
    return frozenset(p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))


async def report_failure(session: SessionAccess, callback: Any, error: BaseException) -> None:
    text = f"{type(error).__name__}: {error}"
    await session.report(f"Callback {callback_name(callback)} failed", status="failed", text=text)


async def run_hooks(callbacks: list[Callback], session: SessionAccess, hook: HookName, **kwargs: Any) -> None:
    for callback in list(callbacks):
        if error := await call_user_code(callback, session, hook=hook, **kwargs):
            await report_failure(session, callback, error)
