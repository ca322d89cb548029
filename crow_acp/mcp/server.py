"""One MCP server's connection, an actor: it lives in its own long-lived task.

A dying streamable-HTTP server cancels everything inside its client block, so no caller ever runs
inside one: calls are started in the actor's task group and answered through a future.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AsyncExitStack
from typing import Any, Literal

from ..util.imports import off_loop
from .connect import connection_lost, describe_failure, import_client, open_client
from .elicit import CallScope, Elicitations, current_call
from .lists import ServerLists
from .specs import ServerSpec
from .tool import McpTool, ServerUnavailable

log = logging.getLogger(__name__)

Status = Literal["connecting", "ready", "failed", "closed"]
CLOSE_WAIT = 8.0
"""Seconds a close waits for the connection to end: the SDK's stdio shutdown of a server that ignores
its stdin closing and SIGTERM takes up to 6.5 s (flush, 2 s after EOF, 2 s after SIGTERM, SIGKILL)."""
STEADY_FOR = 600.0
"""Seconds a server must have stayed up for its death to earn a new restart: a session that runs for
days survives a server that crashes now and then, while one that dies right after each start is not
restarted in a loop."""


class McpServer(ServerLists):
    """One connection actor. It connects in the background; callers wait with started()."""

    def __init__(self, spec: ServerSpec, *, cwd: str, call_timeout: float, connect_timeout: float = 15.0) -> None:
        self.spec, self.cwd = spec, cwd
        self.call_timeout, self.connect_timeout = call_timeout, connect_timeout
        self.status: Status = "connecting"
        self.error: str | None = None
        self.tools: list[McpTool] = []
        self.prompts: list[Any] = []
        self.resources: set[str] = set()
        """The URIs of the server's listed resources (resource links to them are read through it)."""
        self.died = False
        """It was ready, then its connection ended without crow closing it."""
        self.restarts, self._spare_restart, self._up_since = 0, True, 0.0
        self.on_change: Callable[[McpServer], Coroutine[Any, Any, None]] | None = None
        """Called when the server becomes ready or its lists change (the host re-offers its prompts)."""
        self.elicitations = Elicitations(spec.name)
        """Its questions for the user, and its calls in flight they belong to (elicit.py)."""
        self._client: Any = None
        self._calls: asyncio.TaskGroup | None = None
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._generation = 0  # the current connection's: one a restart replaced may still be shutting down
        self._retiring: set[asyncio.Task[None]] = set()
        self._starting: asyncio.Task[None] | None = None
        self._refreshes: set[asyncio.Task[None]] = set()
        self._listing = asyncio.Lock()
        self._told: asyncio.Task[None] | None = None
        self._restart_lock = asyncio.Lock()

    def _changed(self) -> None:
        if self.on_change is not None and self._calls is not None:
            self._calls.create_task(self.on_change(self))

    @property
    def restartable(self) -> bool:
        """A stdio server that died after it started, and has a restart to spare (see STEADY_FOR)."""
        return self.died and self.status == "failed" and self.spec.transport == "stdio" and self._spare_restart

    def start(self) -> None:
        """Start connecting in the background; never waits."""
        self._generation += 1
        self._task = asyncio.create_task(self._run(self._generation), name=f"mcp:{self.spec.name}")
        self._starting = asyncio.create_task(self._await_start(self.connect_timeout))

    async def started(self) -> None:
        """Wait until the server is ready or has failed (at most its connect timeout); never raises."""
        if self._starting is not None:
            await asyncio.wait({self._starting})  # a cancelled waiter leaves the start running

    async def connect(self, timeout: float | None = None) -> None:
        self.connect_timeout = timeout or self.connect_timeout
        self.start()
        await self.started()

    async def _await_start(self, timeout: float) -> None:
        try:
            await asyncio.wait_for(self._ready.wait(), timeout)
        except TimeoutError:
            self._fail(f"did not start within {timeout:g} s")
            if self._task:
                self._task.cancel()
        if self.on_change is not None:  # up or failed: the session offers its prompts or reports it
            await self.on_change(self)

    async def restart(self) -> bool:
        """Start a died server again (once); True when it is ready."""
        async with self._restart_lock:  # concurrent calls restart it once
            if self.restartable:
                if self._task is not None and not self._task.done():
                    # The dead connection ends in the background: the SDK gives a process that lingers after
                    # closing its stdout seconds before SIGTERM, and the call that restarts it must not wait.
                    self._retiring.add(self._task)
                    self._task.add_done_callback(self._retiring.discard)
                self.restarts += 1
                self._spare_restart = False
                self.status, self.error, self.died = "connecting", None, False
                self._ready, self._closing = asyncio.Event(), asyncio.Event()
                await self.connect()
        return self.status == "ready"

    async def _run(self, generation: int) -> None:
        async def on_message(message: Any) -> None:
            if generation == self._generation and not await self.elicitations.message(message):
                await self._on_message(message)  # not what a replaced connection still says

        try:
            # The MCP client takes seconds to import on a busy machine: in a thread, never on the event
            # loop, where it would hold up the session/new response this server must not delay.
            await off_loop(import_client, self.spec.transport)
            async with AsyncExitStack() as stack:
                client = await open_client(
                    self.spec, cwd=self.cwd, call_timeout=self.call_timeout, stack=stack,
                    on_message=on_message, on_end=lambda: self._connection_ended(generation),
                    on_elicit=self.elicitations.callback,
                )  # fmt: skip
                self._client = await stack.enter_async_context(client)
                await self._list_all()
                async with asyncio.TaskGroup() as calls:
                    self._calls = calls
                    listening = calls.create_task(self._listen())
                    self.status, self._up_since = "ready", time.monotonic()
                    self._ready.set()
                    await self._closing.wait()
                    for task in (listening, *self._refreshes):
                        task.cancel()
        except asyncio.CancelledError:
            self._closing.set()  # crow is shutting down: a close, not a failure
            raise
        except Exception as exc:  # top level of this server's task: any failure only loses this server
            if generation == self._generation:
                self._fail(describe_failure(exc))
        finally:
            if generation == self._generation:  # a replaced connection leaves the new one's state alone
                self._ended()

    def _ended(self) -> None:
        self._calls = self._client = None
        if self._closing.is_set() and self.status != "failed":  # a timed-out start stays failed
            self.status = "closed"
        else:
            self._died()
        self._ready.set()
        if self.died and self.on_change is not None:  # tell the editor now, not at the next turn
            self._told = asyncio.ensure_future(self.on_change(self))

    def _died(self) -> None:
        if self.status == "ready" and time.monotonic() - self._up_since >= STEADY_FOR:
            self._spare_restart = True  # it ran steadily: a crash now and then, not a crash loop
        self.died = self.died or self.status == "ready"
        restart = self.spec.transport == "stdio" and self._spare_restart
        if restart and self.died:
            self._fail("the server stopped; crow restarts it once, at its next use")
        else:
            again = self.died and self.restarts  # not again: a server that keeps dying is not restarted in a loop
            early = not self.died and self.spec.transport == "stdio"
            self._fail(
                "the server stopped again after crow restarted it" if again
                else "the server exited before it was ready" if early
                else "the server closed its connection"
            )  # fmt: skip

    def _connection_ended(self, generation: int) -> None:
        """The server's side ended (it exited, or closed its connection) while crow still used it."""
        if generation == self._generation and not self._closing.is_set():
            self._died()  # from now on its next use restarts it (a stdio server with a restart to spare)
            self._closing.set()

    def _fail(self, message: str) -> None:
        if self.status in ("connecting", "ready"):
            self.status, self.error = "failed", message
            log.warning("MCP server %r failed: %s", self.spec.name, message)

    async def call(self, tool: str, arguments: dict[str, Any], scope: CallScope | None = None) -> Any:
        """Run a call inside the actor; cancelling the caller cancels the call (MCP sends notifications/cancelled),
        and its open questions. The server's questions meanwhile belong to `scope`."""
        scope = scope or CallScope(None)
        self.elicitations.in_flight.append(scope)
        token = current_call.set(scope)  # the actor's task for this call is created with it
        try:
            return await self.request(lambda client: client.call_tool(tool, arguments))
        finally:
            current_call.reset(token)
            self.elicitations.in_flight.remove(scope)
            scope.close()

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> Any:
        return await self.request(lambda client: client.get_prompt(name, arguments))

    async def read_resource(self, uri: str) -> Any:
        return await self.request(lambda client: client.read_resource(uri))

    async def request(self, send: Callable[[Any], Awaitable[Any]]) -> Any:
        """Send one request from inside the actor and wait for its answer here."""
        if self.status != "ready" or self._calls is None:
            raise ServerUnavailable(f"MCP server {self.spec.name!r} is not available: {self.error or self.status}")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        task = self._calls.create_task(self._request(send, future, self._generation))
        try:
            return await future
        finally:
            task.cancel()

    async def _request(
        self, send: Callable[[Any], Awaitable[Any]], future: asyncio.Future[Any], generation: int
    ) -> None:
        try:
            future.set_result(await send(self._client))
        except Exception as exc:  # handed to the caller, never swallowed
            if connection_lost(exc):
                self._connection_ended(generation)
                how = "exited" if self.spec.transport == "stdio" else "closed its connection"
                exc = ServerUnavailable(f"MCP server {self.spec.name!r} {how} during the call")
            if not future.done():
                future.set_exception(exc)
        finally:
            if not future.done():
                future.set_exception(ServerUnavailable(f"MCP server {self.spec.name!r} went away during the call"))

    async def close(self) -> None:
        self._closing.set()
        if self.status == "connecting" and self._task:  # a start that hangs would hold the close for 5 s
            self._task.cancel()
        if self._starting:
            self._starting.cancel()
        running = {task for task in (self._task, *self._retiring) if task is not None and not task.done()}
        if running:
            # asyncio.wait, unlike awaiting the task, never raises: a start that timed out was cancelled.
            _, pending = await asyncio.wait(running, timeout=CLOSE_WAIT)
            for task in pending:
                task.cancel()
