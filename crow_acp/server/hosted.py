"""An agent served to a client in the same process (`crow run`), over memory.py's in-memory wire.

The agent side is `crow acp`'s, without stdio and signals: the agent's connection on crow's wire,
text chunks on the wire's fast path, and, when the client is done, the shutdown `crow acp` does when
its editor goes away (shutdown.py): running turns are cancelled and record their results, commands
are killed, MCP servers and the model client are closed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from ..acp.rpc.door import detach
from ..acp.rpc.wire import MAX_MESSAGE
from ..errors import INTERNAL_ERROR, WireError
from .memory import MemoryTransport, memory_pair
from .shutdown import stop_serving

log = logging.getLogger(__name__)
T = TypeVar("T")


class AgentGone(WireError):
    """The agent in this process stopped serving before it answered."""

    def __init__(self) -> None:
        super().__init__(INTERNAL_ERROR, "the agent stopped serving before it answered")


class HostedAgent:
    """The client's view of the hosted agent: its end of the wire, and calls that cannot wait forever."""

    def __init__(self, wire: MemoryTransport, serving: asyncio.Task[None]) -> None:
        self.wire = wire
        self._serving = serving

    async def call(self, request: Awaitable[T]) -> T:
        """The request's answer, or AgentGone when the agent stops serving first (it would wait forever)."""
        answer = asyncio.ensure_future(request)
        try:
            await asyncio.wait({answer, self._serving}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not answer.done():
                answer.cancel()
        if answer.cancelled():
            raise AgentGone()
        try:
            return answer.result()
        except ConnectionError:  # the SDK's word for a peer whose end closed
            raise AgentGone() from None


@asynccontextmanager
async def hosted(agent: Any, client_max_message: int = MAX_MESSAGE) -> AsyncIterator[HostedAgent]:
    """Serve `agent` in this process; yields the client's end. Leaving stops the agent as `crow acp` stops."""
    from ..acp.rpc.door import attach
    from ..acp.rpc.routes import agent_connection

    agent_end, client_end = memory_pair(client_max_message)
    connection = agent_connection(agent, agent_end, listening=False)
    attach(connection, agent_end)  # text chunks skip the SDK's models, as on stdio
    serving = asyncio.create_task(connection.listen())
    try:
        yield HostedAgent(client_end, serving)
    finally:
        await asyncio.shield(_stop(agent, agent_end, client_end, connection, serving))


async def _stop(
    agent: Any, agent_end: MemoryTransport, client_end: MemoryTransport, connection: Any, serving: asyncio.Task[None]
) -> None:
    try:
        await client_end.close()  # the agent reads EOF, and what it still writes is dropped: its editor went away
        await stop_serving(agent, agent_end, connection, asyncio.Event())
    except Exception:  # the agent may be a user's (--agent): whatever its shutdown raises, crow run ends cleanly
        log.exception("stopping the agent failed")
    finally:
        serving.cancel()
        detach(connection)
