"""Ordered store work: one thread and one database connection per worker, a FIFO queue each.

Operations on one session always go to the same worker, so they apply in the order they were made;
sessions spread over the workers, so a slow write to one does not hold up the others.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import queue
import threading
import time
import zlib
from collections.abc import Callable
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

C = TypeVar("C")
T = TypeVar("T")
Timing = Callable[[str, float], None]
"""Told each operation's kind ("write" or "call") and its seconds from submit to done, on the worker thread."""

_STOP = object()


class Worker(Generic[C]):
    def __init__(self, connect: Callable[[], C], close: Callable[[C], None], name: str) -> None:
        self._connect, self._close = connect, close
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self._stopped = False
        self._queued = 0
        self._done = 0
        """Writes queued and applied: flush() needs no round trip when they are equal."""
        self.failure: BaseException | None = None
        """The first write that failed since the last flush (a full disk, a lost server)."""
        self.timing: Timing | None = None
        """Told how long each operation took, queue included (`crow serve`'s store latency metric)."""

    def submit(self, op: Callable[[C], T], kind: str = "call") -> concurrent.futures.Future[T]:
        if self._stopped:
            raise RuntimeError("the session store is closed")
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._queue.put((op, future, kind, time.monotonic()))
        return future

    def write(self, op: Callable[[C], Any]) -> None:
        """Queue a write nobody waits for: a failure is logged and raised by the next flush()."""
        self._queued += 1  # before the worker can count it done
        self.submit(op, "write").add_done_callback(self._check)

    async def call(self, op: Callable[[C], T]) -> T:
        return await asyncio.wrap_future(self.submit(op))

    @property
    def settled(self) -> bool:
        """Every queued write applied, and none failed: flush() has nothing to do."""
        return self._done == self._queued and self.failure is None

    async def flush(self) -> None:
        if self._done != self._queued:
            await self.call(lambda _: None)
        failure, self.failure = self.failure, None
        if failure is not None:
            raise failure

    def stop(self, timeout: float = 10.0) -> None:
        """Apply what is queued, then close the connection (called from a thread or at exit)."""
        self._stopped = True
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join(timeout)

    def _check(self, future: concurrent.futures.Future[Any]) -> None:
        # A lost increment (two threads at once) only makes a later flush() take its round trip.
        self._done += 1
        if (exc := future.exception()) is not None:
            log.error("a session store write failed: %s", exc)
            self.failure = self.failure or exc

    def _run(self) -> None:
        try:
            conn = self._connect()
        except BaseException as exc:  # every queued call raises it: a bad URL, a server that is down
            self._refuse(exc)
            return
        atexit.register(self.stop)  # writes queued when the interpreter exits still land
        try:
            while (item := self._queue.get()) is not _STOP:
                op, future, kind, submitted = item
                if not future.set_running_or_notify_cancel():
                    continue
                result, error = None, None
                try:
                    result = op(conn)
                except BaseException as exc:  # the caller's future carries it; the worker goes on
                    error = exc
                if (timing := self.timing) is not None:  # before the caller can see it done
                    timing(kind, time.monotonic() - submitted)
                if error is not None:
                    future.set_exception(error)
                else:
                    future.set_result(result)
        finally:
            self._close(conn)

    def _refuse(self, exc: BaseException) -> None:
        while (item := self._queue.get()) is not _STOP:
            item[1].set_exception(exc)


class Workers(Generic[C]):
    """A fixed set of workers; a session id always maps to the same one."""

    def __init__(self, connect: Callable[[], C], close: Callable[[C], None], count: int, name: str) -> None:
        self.all = [Worker(connect, close, f"{name}-{index}") for index in range(count)]

    def time_with(self, timing: Timing) -> None:
        """Tell `timing` how long every operation of every worker takes from now on."""
        for worker in self.all:
            worker.timing = timing

    def of(self, session_id: str) -> Worker[C]:
        return self.all[zlib.crc32(session_id.encode()) % len(self.all)]

    async def flush(self) -> None:
        # Called before every update the editor gets: when nothing is queued, no task and no loop turn.
        busy = [worker for worker in self.all if not worker.settled]
        if len(busy) <= 1:
            if busy:
                await busy[0].flush()
            return
        results = await asyncio.gather(*(worker.flush() for worker in busy), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def stop(self) -> None:
        await asyncio.gather(*(asyncio.to_thread(worker.stop) for worker in self.all))
