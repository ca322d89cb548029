"""Ending `crow acp` cleanly: on SIGTERM, SIGINT, SIGHUP or stdin closing, nothing is left behind.

The order matters. Running turns are cancelled the way the editor would cancel them (so each
records a result for every tool call it started and answers its prompt with `cancelled`), and
crow waits for that. Whatever is still unanswered after the grace period gets an error
response. Then the connection closes (cancelling what remains), command process groups are
killed, MCP servers and the model client are closed, and crow exits 0.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Any

from ..acp.rpc.wire import StdioTransport

log = logging.getLogger(__name__)

GRACE = 10.0
"""Seconds cancelled turns get to record their results and answer their prompts."""
CLOSE_LIMIT = 10.0
"""Seconds closing MCP servers and the model client may take."""
SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
SHUTTING_DOWN = -32603


class StopSignals:
    """Counts SIGTERM/SIGINT/SIGHUP on the running loop: the first asks to stop, a second to hurry."""

    def __init__(self) -> None:
        self.first, self.second = asyncio.Event(), asyncio.Event()
        self._before = {sig: signal.getsignal(sig) for sig in SIGNALS}
        loop = asyncio.get_running_loop()
        for sig in SIGNALS:
            loop.add_signal_handler(sig, self._received, sig)

    def _received(self, sig: signal.Signals) -> None:
        log.info("received %s: shutting down", signal.Signals(sig).name)
        (self.second if self.first.is_set() else self.first).set()

    def remove(self) -> None:
        loop = asyncio.get_running_loop()
        for sig, handler in self._before.items():
            loop.remove_signal_handler(sig)
            signal.signal(sig, handler)  # the loop resets to the default, which would kill crow mid-exit


async def first_of(*waits: Any) -> None:
    """Wait until the first of these awaitables finishes; cancel the others."""
    tasks = [asyncio.ensure_future(wait) for wait in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()


async def stop_serving(agent: Any, transport: StdioTransport, connection: Any, hurry: asyncio.Event) -> None:
    """Cancel turns, answer open calls, close the connection, kill commands, close MCP servers."""
    for method, params in list(transport.open_requests.values()):
        if method == "session/prompt" and isinstance(params, dict) and isinstance(params.get("sessionId"), str):
            await _cancel(agent, params["sessionId"])
    if transport.open_requests and not transport.gone.is_set():
        with_grace = asyncio.wait_for(first_of(transport.answered.wait(), hurry.wait(), transport.gone.wait()), GRACE)
        try:
            await with_grace
        except TimeoutError:
            log.warning("requests still open after %g s: answering them with an error", GRACE)
    if answered := await transport.answer_open(SHUTTING_DOWN, "crow is shutting down"):
        log.info("answered %d open request(s) at shutdown", answered)
    try:
        await connection.close()  # cancels what still runs; cancelled tool calls record their results
    except Exception:  # the SDK's handlers are others' code: shutdown goes on whatever they raise
        log.exception("closing the ACP connection failed")
    _kill_commands()
    try:
        await asyncio.wait_for(agent.shutdown(), CLOSE_LIMIT)
    except TimeoutError:
        log.warning("MCP servers did not close within %g s", CLOSE_LIMIT)


async def _cancel(agent: Any, session_id: str) -> None:
    try:
        await agent.cancel(session_id=session_id)
    except Exception:  # the agent may be a user's (--agent): a failed cancel must not stop shutdown
        log.exception("cancelling session %s at shutdown failed", session_id)


def _kill_commands() -> None:
    """Kill the process group of every local command still running (cancelled tools already did)."""
    from ..editor.processes import kill_running_commands

    if killed := kill_running_commands():
        log.info("killed %d command process group(s) at shutdown", killed)
