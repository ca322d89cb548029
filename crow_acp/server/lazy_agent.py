"""`crow acp`'s default agent, answering `initialize` before the agent's modules are imported.

Importing the agent (config models, loop, MCP host, editor tools, prompt, skills, compaction)
costs about as much again as the ACP SDK itself. LazyAgent answers `initialize` from
capabilities.py at once and builds the real agent in a thread meanwhile; every other request
waits for it, then goes to it, the editor's `initialize` first. The configuration is still read
and checked before serving (crow/cli.py), so a mistake in it stops crow with status 3 at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import Any

from ..acp.rpc.capabilities import initialize_response
from ..util.imports import off_loop
from . import startup_gc

log = logging.getLogger(__name__)

FORWARDED = (
    "new_session", "load_session", "list_sessions", "close_session", "set_session_mode", "prompt",
    "set_config_option", "fork_session", "resume_session", "delete_session", "cancel", "authenticate", "logout",
)  # fmt: skip
"""The ACP handlers AcpAgent has besides initialize (tests/server/test_lazy_agent.py checks the two agree)."""


class LazyAgent:
    def __init__(self, build: Callable[[], Any]) -> None:
        self._build = build
        self._building: asyncio.Task[Any] | None = None
        self._conn: Any = None
        self._initialize: dict[str, Any] | None = None
        self._initialized = False

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    def _start(self) -> asyncio.Task[Any]:
        if self._building is None:
            self._building = asyncio.get_running_loop().create_task(self._make())
        return self._building

    async def _make(self) -> Any:
        try:
            agent = await off_loop(self._build)  # the builder exits 3 itself on a config mistake
            startup_gc.resume()
        except Exception:  # the agent's own code failed to build: nothing could be served, so end here
            log.exception("building the agent failed")
            logging.shutdown()
            os._exit(1)
        agent.on_connect(self._conn)
        return agent

    async def agent(self) -> Any:
        """The real agent, built and told what the editor's initialize said."""
        agent = await asyncio.shield(self._start())
        if self._initialize is not None and not self._initialized:
            self._initialized = True
            await agent.initialize(**self._initialize)
        return agent

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, **kwargs: Any) -> Any:
        self._initialize = {"protocol_version": protocol_version, "client_capabilities": client_capabilities, **kwargs}
        self._initialized = False
        # Build once the response is on its way: a thread importing now would slow the answer down.
        asyncio.get_running_loop().call_soon(self._start)
        return initialize_response(protocol_version, client_capabilities)

    async def ext_method(self, method: str, params: dict[str, Any]) -> Any:
        """An extension request (`_crow/share`, `_crow/rewind`, `_session/steering`): the default agent's."""
        return await (await self.agent()).ext_method(method, params)

    async def shutdown(self) -> None:
        if self._building is not None and self._building.done() and not self._building.cancelled():
            await self._building.result().shutdown()


def _forward(name: str) -> Callable[..., Any]:
    async def forward(self: LazyAgent, **kwargs: Any) -> Any:
        return await getattr(await self.agent(), name)(**kwargs)

    forward.__name__ = forward.__qualname__ = name
    return forward


for _name in FORWARDED:
    setattr(LazyAgent, _name, _forward(_name))
