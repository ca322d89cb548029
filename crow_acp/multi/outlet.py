"""Where a MultiAgent's updates leave for the editor: held until the editor knows the session, then sent.

Members answer their own session/new before the MultiAgent answers the editor's, and Zed drops
updates for an unknown session: a member's update is held until the response has gone out. Then,
for an editor that opted in to subagents, the children are announced first (children.py), and the
held updates follow, each for the session it belongs to (conn.py `routed`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..acp.rpc.door import send_update
from .children import announcements
from .conn import routed
from .graph import Graph


class Outlet:
    def __init__(self) -> None:
        self.conn: Any = None
        self.routes: dict[str, Graph] = {}
        """Every open session id of every graph (the editor's and each member's) → its graph."""
        self._held: list[tuple[str, str, Any]] = []
        self._background: set[asyncio.Task[Any]] = set()

    def graph_of(self, session_id: str | None) -> Graph | None:
        return self.routes.get(session_id) if session_id else None

    async def deliver(self, name: str, session_id: str, update: Any) -> None:
        """A member's session/update: held until the editor knows the session, then routed."""
        graph = self.routes.get(session_id)
        if graph is None or not graph.released:
            self._held.append((name, session_id, update))
            return
        for sid, out in routed(graph, name, update):
            await self.send(sid, out)

    async def send(self, session_id: str, update: Any) -> None:
        """An SDK update model, or a newer shape (only ever made for a client that advertised it)."""
        if (graph := self.routes.get(session_id)) is not None and graph.blackboard.unflushed:
            await graph.flush()  # a blackboard change is stored before the editor sees what follows it
        if self.conn is None:
            return
        await send_update(self.conn, session_id, update)  # newer shapes (notices, subagents...) by the door

    def release_after_response(self, graph: Graph, *, announce: bool) -> None:
        """Runs once the session/new|load response has gone out (the SDK queues it before this task runs)."""
        task = asyncio.create_task(self._release(graph, announce))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _release(self, graph: Graph, announce: bool) -> None:
        if announce and graph.children:
            for update in announcements(graph):
                await self.send(graph.editor_sid, update)
        while mine := [item for item in self._held if self.routes.get(item[1]) is graph]:
            self._held = [item for item in self._held if self.routes.get(item[1]) is not graph]
            for name, _, update in mine:
                for sid, out in routed(graph, name, update):
                    await self.send(sid, out)
        graph.released = True
