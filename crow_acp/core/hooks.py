"""How the hook lists run, and how crow calls user code (callbacks, observers) safely. What each
list is and passes is declared in api.py, the plugin API; import those names from there.

Callbacks run in list order. One that raises is logged and reported, and the turn goes on (a
before_tool callback that raises refuses the call: a broken guard must not let a call through).
A callback may carry slash commands in a `commands` attribute (a list of SlashCommand, see
OffersCommands): crow offers them in every session of the agent (this is how `/compact` comes with default_compact()).
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self, SupportsIndex

from ..errors import HookSignatureError

if TYPE_CHECKING:
    from ..api import Callback, HookName
    from .session_access import SessionAccess

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


async def report_failure(session: SessionAccess, callback: Any, error: BaseException) -> None:
    text = f"{type(error).__name__}: {error}"
    await session.report(f"Callback {callback_name(callback)} failed", status="failed", text=text)


async def run_hooks(callbacks: list[Callback], session: SessionAccess, hook: HookName, **kwargs: Any) -> None:
    for callback in list(callbacks):
        if error := await call_user_code(callback, session, hook=hook, **kwargs):
            await report_failure(session, callback, error)
