"""The child `crow acp` process and one prompt through it.

The child runs in its own session (process group) so that a Ctrl-C reaches only `crow run`, which
then cancels the turn and closes the child itself: no second traceback from a child hit by SIGINT.
Its stderr (logs are file-only there; MCP servers' stderr and anything the agent prints) is copied
to crow.log and, with -v, shown; the last lines explain a child that dies before it can answer.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any, TypeVar, cast

from acp import PROTOCOL_VERSION, RequestError, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import ClientCapabilities, Implementation

from crow.exits import FAILED, OK, SETUP, STOPPED, USAGE, Exit
from crow.run import RunOptions
from crow.run.client import TerminalClient
from crow.run.view import View

T = TypeVar("T")
LINE_LIMIT = 50 * 1024 * 1024  # one JSON-RPC line may carry a whole file's diff
NOT_FOUND = -32002
log = logging.getLogger("crow.run")


class ChildExited(Exception):
    """`crow acp` ended before it answered."""


class Child:
    def __init__(self, process: asyncio.subprocess.Process, view: View, verbose: bool) -> None:
        self.process = process
        self.tail: collections.deque[str] = collections.deque(maxlen=20)
        self._reader = asyncio.create_task(self._copy_stderr(view, verbose))

    async def _copy_stderr(self, view: View, verbose: bool) -> None:
        assert self.process.stderr is not None
        while line := await self.process.stderr.readline():
            text = line.decode("utf-8", "replace").rstrip()
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


@asynccontextmanager
async def agent_process(options: RunOptions, view: View) -> AsyncIterator[Child]:
    quiet = [] if options.verbose else ["--log-file-only"]
    command = [sys.executable, "-m", "crow", "acp", *quiet, *options.agent_args]
    process = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        start_new_session=True, limit=LINE_LIMIT,
    )
    child = Child(process, view, options.verbose)
    try:
        yield child
    finally:
        await asyncio.shield(child.close())


async def drive(options: RunOptions, view: View) -> int:
    client = TerminalClient(view)
    for warning in options.warnings:
        view.warning(warning)
    async with agent_process(options, view) as child:
        assert child.process.stdin is not None and child.process.stdout is not None
        # TerminalClient implements the Client methods crow uses; the SDK's Protocol lists them all.
        conn = ClientSideConnection(cast(Any, client), child.process.stdin, child.process.stdout, use_unstable_protocol=True)
        try:
            return await _prompt(options, view, client, conn, child)
        except ChildExited:
            raise await child.failure() from None
        finally:
            await conn.close()


async def _prompt(options: RunOptions, view: View, client: TerminalClient, conn: Any, child: Child) -> int:
    await child.call(conn.initialize(
        protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities(),
        client_info=Implementation(name="crow-run", version="0"),
    ))
    sid = await _open_session(options, client, conn, child)
    try:
        response = await child.call(conn.prompt(session_id=sid, prompt=[text_block(options.prompt)]))
    except RequestError as exc:
        view.error(_message(exc), sid)
        return FAILED
    except asyncio.CancelledError:  # Ctrl-C: stop the turn so the session records it, then go
        await _cancel(conn, child, sid)
        raise
    view.stop(response.stop_reason, sid)
    return OK if response.stop_reason in ("end_turn", "max_tokens") else STOPPED


async def _open_session(options: RunOptions, client: TerminalClient, conn: Any, child: Child) -> str:
    if not options.session:
        response = await child.call(conn.new_session(cwd=options.cwd, mcp_servers=[]))
        return response.session_id
    client.replaying = True  # the history was seen already; only the new turn is shown
    try:
        await child.call(conn.load_session(cwd=options.cwd, session_id=options.session, mcp_servers=[]))
    except RequestError as exc:
        if exc.code == NOT_FOUND:
            raise Exit(USAGE, f"no stored session {options.session!r} (`crow sessions` lists them)") from None
        raise Exit(FAILED, f"cannot continue session {options.session}: {_message(exc)}") from None
    finally:
        client.replaying = False
    return options.session


async def _cancel(conn: Any, child: Child, sid: str) -> None:
    try:
        await asyncio.wait_for(asyncio.shield(conn.cancel(session_id=sid)), 1)
    except (TimeoutError, ConnectionError, RequestError):
        pass  # the child is closed right after; it answers open calls itself


def _message(exc: RequestError) -> str:
    data = exc.data
    if isinstance(data, dict) and isinstance(data.get("details"), str):
        return data["details"]
    return str(exc)
