"""The child `crow acp` process behind `crow run`.

The child runs in its own session (process group) so that a Ctrl-C reaches only `crow run`, which
then cancels the turn and closes the child itself: no second traceback from a child hit by SIGINT.
Its stderr (logs are file-only there; MCP servers' stderr and anything the agent prints) is copied
to crow.log and, with -v, shown; the last lines explain a child that dies before it can answer.
This module does not import the ACP SDK, so the child can start first.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import TypeVar

from crow.exits import FAILED, SETUP, USAGE, Exit
from crow.run.options import RunOptions
from crow.run.view import View
from crow_acp.errors import INTERNAL_ERROR, WireError
from crow_acp.util.secrets import redact

T = TypeVar("T")
LINE_LIMIT = 50 * 1024 * 1024  # one JSON-RPC line may carry a whole file's diff
log = logging.getLogger("crow.run")


class ChildExited(WireError):
    """`crow acp` ended before it answered."""

    def __init__(self) -> None:
        super().__init__(INTERNAL_ERROR, "crow acp ended before it answered")


class Child:
    def __init__(self, process: asyncio.subprocess.Process, view: View, verbose: bool) -> None:
        self.process = process
        self.tail: collections.deque[str] = collections.deque(maxlen=20)
        self._reader = asyncio.create_task(self._copy_stderr(view, verbose))

    async def _copy_stderr(self, view: View, verbose: bool) -> None:
        assert self.process.stderr is not None
        while line := await self.process.stderr.readline():
            text = redact(line.decode("utf-8", "replace").rstrip())
            self.tail.append(text)
            if verbose:  # the child logs to crow.log itself and, with -v, to this pipe too
                view.log(text)
            else:  # MCP servers' stderr and what the agent prints: kept in crow.log
                log.info("agent: %s", text)

    async def call(self, request: Awaitable[T]) -> T:
        """The request's answer, or ChildExited when the child dies first (a request would wait forever)."""
        answer = asyncio.ensure_future(request)
        exited = asyncio.ensure_future(self.process.wait())
        try:
            await asyncio.wait({answer, exited}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            exited.cancel()
            if not answer.done():
                answer.cancel()
        if answer.done() and not answer.cancelled():
            try:
                return answer.result()
            except ConnectionError:  # the SDK's word for a child that closed its stdout
                raise ChildExited() from None
        raise ChildExited()

    async def failure(self) -> Exit:
        """Why the child died: its own `crow: ...` line and status, when it wrote one."""
        await asyncio.wait({self._reader, asyncio.ensure_future(self.process.wait())}, timeout=5,
                           return_when=asyncio.ALL_COMPLETED)
        status = self.process.returncode
        said = [line.removeprefix("crow: ") for line in self.tail if line.startswith("crow: ")]
        message = said[-1] if said else f"crow acp exited with status {status}; see the log, {_log_hint()}"
        return Exit(status if status in (SETUP, USAGE) else FAILED, message)

    async def close(self) -> None:
        process = self.process
        if process.returncode is None:
            if process.stdin is not None and not process.stdin.is_closing():
                process.stdin.close()  # crow acp exits when its editor goes away
            try:
                await asyncio.wait_for(process.wait(), 3)
            except TimeoutError:
                process.kill()
                await process.wait()
        await asyncio.wait({self._reader}, timeout=1)
        self._reader.cancel()


def _log_hint() -> str:
    home = os.environ.get("CROW_HOME") or "~/.crow"
    return f"{home}/logs/crow.log"


async def start_child(options: RunOptions) -> asyncio.subprocess.Process:
    """Start `crow acp`; crow run imports the ACP SDK while it boots."""
    quiet = [] if options.verbose else ["--log-file-only"]
    command = [sys.executable, "-m", "crow", "acp", *quiet, *options.agent_args]
    return await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        start_new_session=True, limit=LINE_LIMIT,
    )


@asynccontextmanager
async def agent_process(process: asyncio.subprocess.Process, view: View, verbose: bool) -> AsyncIterator[Child]:
    child = Child(process, view, verbose)
    try:
        yield child
    finally:
        await asyncio.shield(child.close())
