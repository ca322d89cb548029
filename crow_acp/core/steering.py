"""Steering: user messages for the turn that is running, taken at its next model call.

acp/ offers a message (already the model's content, with its metadata); the loop takes what is
waiting right before it builds each model request, so a steered message never lands between a
tool call and its result. A message that arrives while a reply streams cuts that reply off (what was
shown is kept, marked as cut), and the model answers the message at once. The inbox accepts messages
only while a model turn runs; once the loop has decided that the turn ends, `offer` says False and the
caller starts a new turn instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..history import EntryMeta


class Records(Protocol):
    """Where delivered messages go: the session (session.py imports this module, not the other way)."""

    def record(self, message: dict[str, Any], meta: EntryMeta | None = None) -> Any: ...


@dataclass(frozen=True)
class Steer:
    message: dict[str, Any]
    """The user message as the model sees it."""
    meta: EntryMeta


@dataclass(eq=False)
class SteeringInbox:
    waiting: list[Steer] = field(default_factory=list)
    accepting: bool = False
    """True while a model turn runs and may still take a message."""
    _cut: Callable[[], None] | None = None
    """Cuts off the reply streaming now (set by the loop while it streams)."""

    def offer(self, steer: Steer) -> bool:
        """Give the running turn a message; False when no model turn would take it."""
        if not self.accepting:
            return False
        self.waiting.append(steer)
        if self._cut is not None:
            self._cut()
        return True

    def deliver(self, session: Records) -> int:
        """Record the waiting messages as user messages (at a model-call boundary); how many there were."""
        taken, self.waiting = self.waiting, []
        for steer in taken:
            session.record(steer.message, steer.meta)
        return len(taken)

    @contextmanager
    def open(self) -> Iterator[None]:
        """The model turn's span: messages are accepted; what is still waiting at its end is dropped
        (a cancel ends the turn and what was meant for it)."""
        self.accepting = True
        try:
            yield
        finally:
            self.accepting, self.waiting, self._cut = False, [], None

    @contextmanager
    def cutting(self, cut: Callable[[], None]) -> Iterator[None]:
        """While a reply streams: a message that arrives calls `cut` (one already waiting does at once)."""
        self._cut = cut
        try:
            if self.waiting:
                cut()
            yield
        finally:
            self._cut = None
