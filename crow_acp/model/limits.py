"""What bounds one streamed model request, and what repairs its text (used by llm.ModelClient).

`timeouts.model` alone used to be the HTTP client's timeout, which restarts with every byte: a
model that drips one chunk every few seconds was never stopped. Here three clocks run at once:

    model_first_byte   from sending the request (retries included) to the reply's first chunk
    model_idle         between one chunk and the next
    model              the whole request, from sending it to its last chunk

Whichever runs out first ends the request with a ModelError that names the setting.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Iterable
from typing import Any, Protocol, TypeVar

import anyio

from ..errors import ModelError
from ..util.text import SurrogateJoiner, clean_text

T = TypeVar("T")


class Deadline:
    """The three clocks of one model request, started when it is created.

    The wait for each chunk is bounded without a cancel scope per chunk (entering and leaving
    one cost more than the rest of crow's work on a chunk): one timer per request, re-armed
    only when it fires early, cancels the waiting task the way asyncio.timeout does.
    """

    def __init__(self, first_byte: float, idle: float, total: float) -> None:
        self.first_byte, self.idle, self.total = first_byte, idle, total
        self.started = time.monotonic()
        self.receiving = False
        """Whether the first chunk arrived (from then on the idle clock applies, not the first-byte one)."""
        self._since: float | None = None
        """When the current wait for a chunk began; None between waits."""
        self._timer: asyncio.TimerHandle | None = None
        self._expired: str | None = None
        """The message of the clock that ran out during the current wait (the task was cancelled)."""

    def _limit(self, now: float | None = None) -> tuple[float, str]:
        """Seconds left for the next wait, and which clock bounds it (see _message)."""
        elapsed = (time.monotonic() if now is None else now) - self.started
        left_total = self.total - elapsed
        step, clock = (self.idle, "model_idle") if self.receiving else (self.first_byte - elapsed, "model_first_byte")
        if left_total <= step:
            return max(left_total, 0.0), "model"
        return max(step, 0.0), clock

    def _message(self, clock: str) -> str:
        if clock == "model_idle":
            return f"The model's stream stalled: nothing arrived for {self.idle:g} s (timeouts.model_idle)."
        if clock == "model_first_byte":
            return f"The model sent nothing for {self.first_byte:g} s (timeouts.model_first_byte)."
        return f"The model's reply took longer than {self.total:g} s (timeouts.model)."

    async def wait(self, work: Awaitable[T]) -> T:
        """Await `work` within what the clocks allow; ModelError when they run out."""
        limit, clock = self._limit()
        with anyio.move_on_after(limit) as timer:
            return await work
        assert timer.cancelled_caught
        raise ModelError(self._message(clock))

    async def next_chunk(self, chunks: AsyncIterator[Any]) -> Any:
        """The stream's next chunk; StopAsyncIteration at its end."""
        task = asyncio.current_task()
        assert task is not None
        self._since = since = time.monotonic()
        left = self._limit(since)[0]
        if self._timer is None or self._timer.when() > asyncio.get_running_loop().time() + left:
            self._arm(task, left)
        cancelling = task.cancelling()
        try:
            chunk = await chunks.__anext__()
        except asyncio.CancelledError:
            # Ours alone (no other cancel pending, as asyncio.timeout decides): the clock ran out.
            if self._expired is not None and task.uncancel() <= cancelling:
                raise ModelError(self._expired) from None
            raise
        finally:
            self._since = None
        if self._expired is not None:  # the stream swallowed our cancel: the clock still ran out
            task.uncancel()
            raise ModelError(self._expired)
        self.receiving = True
        return chunk

    def _arm(self, task: asyncio.Task[Any], delay: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(delay, self._check, task)

    def _check(self, task: asyncio.Task[Any]) -> None:
        """The timer fired: cancel the waiting task if its clock ran out, else re-arm for when it will."""
        self._timer = None
        if self._since is None or self._expired is not None:
            return  # between waits: the next wait arms the timer again
        left, clock = self._limit(self._since)
        waited = time.monotonic() - self._since
        if waited >= left:
            self._expired = self._message(clock)
            task.cancel()
        else:
            self._arm(task, left - waited)

    def close(self) -> None:
        """Stop the timer (the request is over)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class StreamRepair:
    """Valid Unicode from a model stream: surrogate pairs split across chunks joined, per channel."""

    def __init__(self) -> None:
        self._text, self._reasoning = SurrogateJoiner(), SurrogateJoiner()
        self._arguments: dict[int, SurrogateJoiner] = {}

    def text(self, piece: str) -> str:
        return self._text.feed(piece)

    def reasoning(self, piece: str) -> str:
        return self._reasoning.feed(piece)

    def arguments(self, index: int, piece: str) -> str:
        return self._arguments.setdefault(index, SurrogateJoiner()).feed(piece)

    @staticmethod
    def name(value: Any) -> Any:
        return clean_text(value) if isinstance(value, str) else value

    def leftovers(self) -> tuple[str, str, dict[int, str]]:
        """What is still held at the end (lone halves, as U+FFFD): text, reasoning, arguments by index."""
        held = {index: joiner.flush() for index, joiner in self._arguments.items()}
        return self._text.flush(), self._reasoning.flush(), {i: text for i, text in held.items() if text}


class EventReader(Protocol):
    """A wire's reader of its provider's stream events (anthropic_wire, responses_wire)."""

    finished: bool

    def read(self, event: Any) -> Iterable[Any]: ...


async def read_stream(deadline: Deadline, stream: Any, reader: EventReader) -> AsyncIterator[Any]:
    """The deltas of a provider's event stream, each event waited for under `deadline`, up to the reply's end."""
    while not reader.finished:
        try:
            event = await deadline.next_chunk(stream)
        except StopAsyncIteration:
            return
        for delta in reader.read(event):
            yield delta
