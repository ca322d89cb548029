"""model_limits.Deadline bounds each wait for a chunk with one timer per request, cancelling the
waiting task itself: these check that it stops a stalled stream, lets a steady one run past the
idle limit, and never turns the user's cancel into a timeout or leaves a cancel behind."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import anyio
import pytest

from crow_acp.errors import ModelError
from crow_acp.model.limits import Deadline

pytestmark = pytest.mark.anyio


async def chunks(count: int, every: float, then_stall: bool = False) -> AsyncIterator[int]:
    for index in range(count):
        await asyncio.sleep(every)
        yield index
    if then_stall:
        await asyncio.sleep(3600)


async def drain(deadline: Deadline, stream: AsyncIterator[int]) -> list[int]:
    got = []
    try:
        while True:
            try:
                got.append(await deadline.next_chunk(stream))
            except StopAsyncIteration:
                return got
    finally:
        deadline.close()


async def test_a_steady_stream_runs_longer_than_the_idle_limit():
    # 20 chunks 0.05 s apart: 1 s in all, five times the idle limit; the timer re-arms as it fires.
    assert await drain(Deadline(first_byte=5, idle=0.2, total=30), chunks(20, 0.05)) == list(range(20))


async def test_a_stall_after_some_chunks_ends_with_the_idle_message():
    with pytest.raises(ModelError, match=r"timeouts\.model_idle"):
        await drain(Deadline(first_byte=5, idle=0.3, total=30), chunks(3, 0.01, then_stall=True))


async def test_nothing_at_all_ends_with_the_first_byte_message():
    with pytest.raises(ModelError, match=r"timeouts\.model_first_byte"):
        await drain(Deadline(first_byte=0.3, idle=30, total=30), chunks(0, 0, then_stall=True))


async def test_a_stream_that_drips_past_the_total_ends_with_the_total_message():
    with pytest.raises(ModelError, match=r"\(timeouts\.model\)"):
        await drain(Deadline(first_byte=5, idle=5, total=0.4), chunks(1000, 0.05))


async def test_the_task_goes_on_normally_after_a_timeout():
    with pytest.raises(ModelError):
        await drain(Deadline(first_byte=0.2, idle=30, total=30), chunks(0, 0, then_stall=True))
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0  # no cancel of ours is left pending
    await asyncio.sleep(0.05)  # would raise CancelledError if one were


async def test_the_users_cancel_stays_a_cancel():
    with anyio.move_on_after(0.2) as scope:
        await drain(Deadline(first_byte=30, idle=30, total=30), chunks(2, 0.01, then_stall=True))
    assert scope.cancelled_caught


async def test_a_cancel_and_a_timeout_at_once_leave_nothing_behind():
    # The user's cancel and the first-byte clock run out together: either may win, none is left over.
    for _ in range(5):
        try:
            with anyio.move_on_after(0.25):
                await drain(Deadline(first_byte=0.25, idle=30, total=30), chunks(0, 0, then_stall=True))
        except ModelError:
            pass
        task = asyncio.current_task()
        assert task is not None and task.cancelling() == 0
        await asyncio.sleep(0.01)
