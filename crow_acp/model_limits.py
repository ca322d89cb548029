"""What bounds one streamed model request, and what repairs its text (used by llm.ModelClient).

`timeouts.model` alone used to be the HTTP client's timeout, which restarts with every byte: a
model that drips one chunk every few seconds was never stopped. Here three clocks run at once:

    model_first_byte   from sending the request (retries included) to the reply's first chunk
    model_idle         between one chunk and the next
    model              the whole request, from sending it to its last chunk

Whichever runs out first ends the request with a ModelError that names the setting.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

import anyio

from .errors import ModelError
from .text_repair import SurrogateJoiner, clean_text

T = TypeVar("T")


class Deadline:
    """The three clocks of one model request, started when it is created."""

    def __init__(self, first_byte: float, idle: float, total: float) -> None:
        self.first_byte, self.idle, self.total = first_byte, idle, total
        self.started = time.monotonic()
        self.receiving = False
        """Whether the first chunk arrived (from then on the idle clock applies, not the first-byte one)."""

    def _limit(self) -> tuple[float, str]:
        """Seconds left for the next wait, and the message if they run out."""
        elapsed = time.monotonic() - self.started
        left_total = self.total - elapsed
        if self.receiving:
            step, step_message = self.idle, f"The model's stream stalled: nothing arrived for {self.idle:g} s (timeouts.model_idle)."
        else:
            step = self.first_byte - elapsed
            step_message = f"The model sent nothing for {self.first_byte:g} s (timeouts.model_first_byte)."
        if left_total <= step:
            return max(left_total, 0.0), f"The model's reply took longer than {self.total:g} s (timeouts.model)."
        return max(step, 0.0), step_message

    async def wait(self, work: Awaitable[T]) -> T:
        """Await `work` within what the clocks allow; ModelError when they run out."""
        limit, message = self._limit()
        with anyio.move_on_after(limit) as timer:
            return await work
        assert timer.cancelled_caught
        raise ModelError(message)

    async def next_chunk(self, chunks: AsyncIterator[Any]) -> Any:
        """The stream's next chunk; StopAsyncIteration at its end."""
        chunk = await self.wait(chunks.__anext__())
        self.receiving = True
        return chunk


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
