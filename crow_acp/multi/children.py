"""Members as child sessions, for an editor that opted in to subagents (clientCapabilities.subagents).

The entry agent's session is the editor's (the parent); every other member's own session is a child
of it, with its own id (crow made it, so crow owns it, as the spec asks). The parent announces each
child with `subagent_update` (its name as title, cancel allowed) before anything carries the child's
id: when the editor's session/new|load response has gone out, and first thing in a load's replay.
A hand-off is a `session_message` on the recipient's session, from the sender's; a child's state is
"running" from its hand-off to the end of its turn, then "idle" with the turn's stop reason.

An editor that did not opt in sees one attributed transcript (conn.py) and none of this.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from ..acp.rpc.shapes.subagents import (
    SessionMessage,
    SubagentUpdate,
    idle_state,
    running_state,
    session_message,
    subagent_update,
)
from .graph import Graph

SendTo = Callable[[str, Any], Awaitable[None]]
"""`send(session_id, update)`: an SDK update model, or a newer one (acp/rpc/shapes/)."""


def announcements(graph: Graph) -> list[SubagentUpdate]:
    """The `subagent_update`s that make every non-entry member a child of the editor's session."""
    return [
        subagent_update(sid, title=name, description=f"{name}, a member of this multi-agent session")
        for name, sid in graph.sessions.items()
        if name != graph.entry_name
    ]


def handoff_message(graph: Graph, source: str, target: str, text: str, message_id: str) -> tuple[str, SessionMessage]:
    """(session it goes on, `session_message`) for `text` handed from `source` ("": the run itself) to `target`."""
    sender = graph.sessions.get(source, graph.editor_sid)
    recipient = graph.sessions[target]
    return recipient, session_message(message_id, sender, recipient, text)


class ChildSessions:
    """One run's view of the graph's children: hand-offs and the state of each child's work."""

    def __init__(self, graph: Graph, send: SendTo) -> None:
        self.graph = graph
        self._send = send

    async def handed(self, source: str, target: str, text: str) -> None:
        if target != self.graph.entry_name:
            await self._send(self.graph.editor_sid, subagent_update(self.graph.sessions[target], state=running_state()))
        await self._send(*handoff_message(self.graph, source, target, text, f"handoff-{uuid.uuid4().hex[:12]}"))

    async def finished(self, target: str, stop_reason: str, error: str | None) -> None:
        if target != self.graph.entry_name:
            state = idle_state(stop_reason, error)
            await self._send(self.graph.editor_sid, subagent_update(self.graph.sessions[target], state=state))
