"""What members of a MultiAgent send the editor: one session with attribution, or child sessions.

Each member gets a MemberConnection instead of the editor's connection. For an editor that opted
in to subagents, every member but the entry speaks on its own child session (children.py): its
updates, permission questions and usage carry its own session id, unlabelled (its title, commands,
mode and options stay the parent's). Otherwise it rewrites the member's session id to the editor's,
and labels the output so the user sees who speaks:

    agent_message_chunk   a "**reviewer:** " chunk opens each message (same message id)
    tool_call(_update)    title "reviewer: Read file"; ids of non-entry members get "reviewer/"
                          in front, since two models may both number their calls call_1, call_2…
    usage, title, slash commands   only the entry's (the editor has one gauge, one title, and
                          routes `/` commands to the entry)

The outlet (outlet.py) holds everything until the editor knows the session.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from acp import text_block

from ..acp.questions.elicitation import QuestionRoute, RoutesQuestions, route_of
from ..acp.updates.shapes import LastPlans, event_update, replay_updates
from ..events import ActivityReported
from .children import announcements, handoff_message
from .graph import Graph
from .run import handoff_title

if TYPE_CHECKING:
    from ..history import StoredMessage

ENTRY_ONLY = {
    "usage_update",
    "session_info_update",
    "available_commands_update",
    "current_mode_update",
    "config_option_update",
}


class GraphHost(Protocol):
    """What a member's connection needs of its MultiAgent: the editor, and where a member's update goes."""

    conn: Any

    def graph_of(self, session_id: str | None) -> Graph | None: ...
    async def deliver(self, name: str, session_id: str, update: Any) -> None: ...


class MemberConnection(RoutesQuestions):
    """The editor connection as one member agent sees it (outgoing calls only)."""

    def __init__(self, multi: GraphHost, name: str) -> None:
        self._multi = multi
        self._name = name

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        await self._multi.deliver(self._name, session_id, update)

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> Any:
        if (graph := self._multi.graph_of(session_id)) is not None and is_child(graph, self._name):
            session_id = graph.sessions[self._name]  # the child asks for itself
        elif graph is not None:
            session_id, tool_call = graph.editor_sid, attribute_tool(graph, self._name, tool_call)
        return await self._multi.conn.request_permission(
            session_id=session_id, tool_call=tool_call, options=options, **kwargs
        )

    def question_route(self, session_id: str, tool_call_id: str | None) -> QuestionRoute | None:
        """A member's question (elicitation) goes where its tool calls are shown: on its child session, or
        on the editor's with the attributed call id."""
        graph = self._multi.graph_of(session_id)
        if graph is None:
            return None
        if is_child(graph, self._name):
            return route_of(self._multi.conn, graph.sessions[self._name], tool_call_id)
        shown = attributed_id(graph, self._name, tool_call_id) if tool_call_id is not None else None
        return route_of(self._multi.conn, graph.editor_sid, shown)

    # fs/* and terminal/*: the same request, for the editor's session id.
    async def read_text_file(self, **kwargs: Any) -> Any:
        return await self._multi.conn.read_text_file(**self._editor(kwargs))

    async def write_text_file(self, **kwargs: Any) -> Any:
        return await self._multi.conn.write_text_file(**self._editor(kwargs))

    async def create_terminal(self, **kwargs: Any) -> Any:
        return await self._multi.conn.create_terminal(**self._editor(kwargs))

    async def terminal_output(self, **kwargs: Any) -> Any:
        return await self._multi.conn.terminal_output(**self._editor(kwargs))

    async def wait_for_terminal_exit(self, **kwargs: Any) -> Any:
        return await self._multi.conn.wait_for_terminal_exit(**self._editor(kwargs))

    async def kill_terminal(self, **kwargs: Any) -> Any:
        return await self._multi.conn.kill_terminal(**self._editor(kwargs))

    async def release_terminal(self, **kwargs: Any) -> Any:
        return await self._multi.conn.release_terminal(**self._editor(kwargs))

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await self._multi.conn.ext_method(method, params)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        await self._multi.conn.ext_notification(method, params)

    def _editor(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        if (graph := self._multi.graph_of(kwargs.get("session_id"))) is not None:
            return {**kwargs, "session_id": graph.editor_sid}
        return kwargs


CHILD_DROPPED = ENTRY_ONLY - {"usage_update"}
"""A child has its own usage gauge; its title, commands, mode and options stay the parent's."""


def is_child(graph: Graph, name: str) -> bool:
    return graph.children and name != graph.entry_name


def routed(graph: Graph, name: str, update: Any) -> list[tuple[str, Any]]:
    """A member's update as (session id, update) pairs for the editor: on its own child session, or attributed
    on the editor's. The member's own session id is used, whatever id the update came with."""
    if is_child(graph, name):
        return [] if update.session_update in CHILD_DROPPED else [(graph.sessions[name], update)]
    return [(graph.editor_sid, out) for out in attribute(graph, name, update)]


def attribute(graph: Graph, name: str, update: Any) -> list[Any]:
    """A member's update as the editor gets it: dropped, labelled, or passed on."""
    kind = update.session_update
    if kind in ENTRY_ONLY and name != graph.entry_name:
        return []
    if kind == "agent_message_chunk" and graph.labelled and (name, update.message_id) not in graph.headed:
        graph.headed.add((name, update.message_id))
        return [update.model_copy(update={"content": text_block(f"\n\n**{name}:** ")}), update]
    if kind in ("tool_call", "tool_call_update"):
        return [attribute_tool(graph, name, update)]
    return [update]


def attributed_id(graph: Graph, name: str, tool_call_id: str) -> str:
    """A member's tool call id in the editor's flattened session: two models may both number theirs call_1."""
    return tool_call_id if name == graph.entry_name else f"{name}/{tool_call_id}"


def attribute_tool(graph: Graph, name: str, call: Any) -> Any:
    changes: dict[str, Any] = {}
    if name != graph.entry_name:
        changes["tool_call_id"] = attributed_id(graph, name, call.tool_call_id)
    if graph.labelled and call.title:
        changes["title"] = f"{name}: {call.title}"
    return call.model_copy(update=changes) if changes else call


async def replay_graph(graph: Graph, send: Callable[[str, Any], Awaitable[None]]) -> None:
    """session/load: every member's history, interleaved as it happened, routed as it was live.

    Members share one store, so its store-wide order gives the order across sessions. A message
    one agent handed another replays as that hand-off's tool call, not as the user speaking (and as
    a `session_message` too, with child sessions, which are announced before anything else).
    """
    if graph.children:
        for announcement in announcements(graph):
            await send(graph.editor_sid, announcement)
    rows = [
        (entry.order, name, entry)
        for name, sid in graph.sessions.items()
        for entry in await graph.agents[name].store.load(sid)
    ]
    plans = LastPlans() if graph.agents[graph.entry_name].editor.features.plan else None
    for _, name, entry in sorted(rows, key=lambda row: row[0]):
        for sid, update in _replayed(graph, name, entry, plans):
            await send(sid, update)
    for update in plans.updates() if plans is not None else ():  # one plan id per plan: no attribution
        await send(graph.editor_sid, update)


def _replayed(graph: Graph, name: str, entry: StoredMessage, plans: LastPlans | None) -> list[tuple[str, Any]]:
    meta = entry.meta
    plain_user = entry.message["role"] == "user" and meta.replayed and meta.kind in ("message", "prompt")
    if plain_user and (meta.handoff is not None or name != graph.entry_name):
        source = meta.handoff.source if meta.handoff else None
        text = entry.message.get("content") or ""
        activity_id, title = f"handoff-{entry.row_id}", handoff_title(source, name)
        shown = event_update(ActivityReported(graph.editor_sid, activity_id, title, "completed", "other", text))
        if not graph.children:
            return [(graph.editor_sid, shown)]
        return [(graph.editor_sid, shown), handoff_message(graph, source or "", name, text, activity_id)]
    features = graph.agents[name].editor.features  # what the editor advertised (every member was told)
    return [out for update in replay_updates([entry], features, plans) for out in routed(graph, name, update)]
