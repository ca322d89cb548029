"""A model request's retries, told to whoever listens in the task that made the request.

The openai client retries a 429, a 5xx or a lost connection on its own (`max_retries`), silently:
the user only sees a turn that takes longer. A turn shows each retry as a warning notice
(`retries_shown`); the client (`reporting_client`) calls the listener before each retry's wait.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from typing import TYPE_CHECKING, Any

from ..events import Event, NoticeRaised

if TYPE_CHECKING:
    from openai import AsyncOpenAI

RetryListener = Callable[[int, int, "int | None"], Awaitable[None]]
"""(this retry's number, the most there may be, the HTTP status that caused it or None for no answer)."""

_listener: ContextVar[RetryListener | None] = ContextVar("crow_model_retry_listener", default=None)


MODEL_RETRY = "The model request failed; crow is retrying"


@contextmanager
def retries_shown(session_id: str, emit: Callable[[Event], Awaitable[None]]) -> Iterator[None]:
    """Within the block (and the tasks it starts), each retry of a model request is emitted as a warning."""

    async def retrying(retry: int, most: int, status: int | None) -> None:
        cause = f"HTTP {status}" if status is not None else "no answer"
        await emit(NoticeRaised(session_id, "warning", MODEL_RETRY, f"Retry {retry} of {most} ({cause})."))

    token = _listener.set(retrying)
    try:
        yield
    finally:
        _listener.reset(token)


async def report_retry(retry: int, max_retries: int, status: int | None) -> None:
    if (listener := _listener.get()) is not None:
        await listener(retry, max_retries, status)


@cache
def reporting_client() -> type[AsyncOpenAI]:
    """AsyncOpenAI, reporting each retry first (made on first use: importing openai is slow)."""
    from openai import AsyncOpenAI

    class ReportingOpenAI(AsyncOpenAI):
        # openai (pinned <4) waits in _sleep_for_retry before every retry: its only hook for them.
        async def _sleep_for_retry(self, *, retries_taken: int, max_retries: int, response: Any, **kwargs: Any) -> None:
            await report_retry(retries_taken + 1, max_retries, response.status_code if response is not None else None)
            await super()._sleep_for_retry(
                retries_taken=retries_taken, max_retries=max_retries, response=response, **kwargs
            )

    return ReportingOpenAI


@cache
def reporting_anthropic() -> type[Any]:
    """AsyncAnthropic, reporting each retry first (429, 529 overloaded, 5xx; it honours retry-after)."""
    from anthropic import AsyncAnthropic

    class ReportingAnthropic(AsyncAnthropic):
        async def _sleep_for_retry(self, *, retries_taken: int, max_retries: int, response: Any, **kwargs: Any) -> None:
            await report_retry(retries_taken + 1, max_retries, response.status_code if response is not None else None)
            await super()._sleep_for_retry(
                retries_taken=retries_taken, max_retries=max_retries, response=response, **kwargs
            )

    return ReportingAnthropic
