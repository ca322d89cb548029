"""The delegation budget: one editor prompt starts at most so many helper sessions, and its helpers make
at most so many model calls, at every depth together ([delegate] max_helpers, max_helper_calls).

Without it one reply of 20 delegate calls, each helper delegating again, made 421 helper sessions and
1,263 model requests from one prompt. A budget belongs to the turn of the editor's session: the first
delegate call of the turn makes it, its end_turn drops it. A helper's session is entered under its
delegation's budget while it runs, so a helper's own delegations draw on the same one (plan mode's
too). Every model call of a helper's session goes through `BudgetedModel`: once the calls are spent
the helper's turn ends with a ModelError, which its delegate call answers to the model, as a delegate
call refused for want of helper sessions is answered, with the reason and the numbers.
A foreign helper (`[agents.NAME]`) counts as a helper session; its own model is its own to count.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ModelError

if TYPE_CHECKING:
    from ..model.client import ModelClient, StreamDelta

_BY_SESSION: dict[str, Budget] = {}
"""The budget each session's delegations draw on: an editor session's for its current turn, a running
helper's that of the prompt it serves. Entries leave at end_turn and when a helper's run ends."""


@dataclass
class Budget:
    helpers: int
    calls: int
    started: int = 0
    called: int = 0

    def take_helper(self) -> str | None:
        """None when one more helper session may start (and it is counted), else why not."""
        if self.started >= self.helpers:
            return (
                f"Not delegated: this prompt has started its {self.helpers} helper sessions "
                "([delegate] max_helpers), the most it may. Do this task yourself, or combine tasks."
            )
        self.started += 1
        return None

    def take_call(self) -> None:
        """Count one model call of a helper; a ModelError once the prompt's calls are spent."""
        if self.called >= self.calls:
            raise ModelError(
                f"the delegation budget is spent: this prompt's helpers made {self.calls} model calls "
                "([delegate] max_helper_calls), the most they may; the helper stopped here"
            )
        self.called += 1


def budget_of(session_id: str, helpers: int, calls: int) -> Budget:
    """The budget `session_id`'s delegations draw on (a new one for an editor session's turn)."""
    return _BY_SESSION.setdefault(session_id, Budget(helpers, calls))


def enter(session_id: str, budget: Budget) -> None:
    """A helper's session serves the prompt `budget` belongs to (until `leave`)."""
    _BY_SESSION[session_id] = budget


def leave(session_id: str) -> None:
    _BY_SESSION.pop(session_id, None)


class BudgetedModel:
    """A helper session's model client: every call counted against its prompt's budget first."""

    def __init__(self, inner: ModelClient, budget: Budget) -> None:
        self.inner, self.budget = inner, budget
        self.profile = inner.profile

    def stream(
        self, messages: list[dict], tools: list[dict], *, reasoning_effort: str | None = None
    ) -> AsyncIterator[StreamDelta]:
        self.budget.take_call()
        return self.inner.stream(messages, tools, reasoning_effort=reasoning_effort)

    async def complete(self, messages: list[dict]) -> str:
        self.budget.take_call()
        return await self.inner.complete(messages)

    async def close(self) -> None:
        await self.inner.close()
