"""The editor connection as a `delegate` helper sees it: each of its sessions is a child of the delegating one.

For an editor that opted in to subagents, a child is announced on its parent (`subagent_update`, the
helper's name as title, the task as description) before its first update; its updates and permission
questions then carry its own id, and the task arrives as a `session_message` from the parent. For any
other editor nothing of the child reaches it as a session: its words and tool calls are kept for the
delegate call's summary, and its permission questions are asked on the parent's session, attributed
("crow: Write notes.txt", call ids under the delegate call's). fs/* and terminal/* requests go out for
the parent's session, which the editor knows. Updates for a session that is no registered child are
dropped and logged.

`upstream` is what the delegating agent talks to: the editor's connection, or (one level deeper) the
ChildConnection of the helper that delegated in turn.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ..acp.questions.elicitation import QuestionRoute, RoutesQuestions, route_of
from ..acp.rpc.door import send_update
from ..acp.rpc.shapes.subagents import idle_state, running_state, session_message, subagent_update
from ..policy.modes import Mode
from .conn import CHILD_DROPPED
from .delegate_budget import Budget

log = logging.getLogger(__name__)


@dataclass
class Delegation:
    """One `delegate` call, as its child session sees its parent."""

    parent_sid: str
    call_id: str
    agent: str
    task: str
    mode: Mode
    """The parent's permission mode: the child's, never a more permissive one."""
    cwd: str
    directories: list[str]
    subagents: bool
    """The editor opted in to subagents: the child is shown as a child session."""
    budget: Budget | None = None
    """What the prompt it serves may still spend on helpers (delegate_budget.py); None: unbounded."""
    said: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    """The child's words and tool-call titles, for the summary a client without child sessions sees."""


async def push(conn: Any, session_id: str, update: Any) -> None:
    """An update upstream: through the update door (newer shapes too), or to a helper's connection as it is."""
    if isinstance(conn, ChildConnection):
        await conn.session_update(session_id=session_id, update=update)
    else:
        await send_update(conn, session_id, update)


class ChildConnection(RoutesQuestions):
    def __init__(self, upstream: Any) -> None:
        self.upstream = upstream
        self._children: dict[str, Delegation] = {}

    async def attach(self, sid: str, delegation: Delegation) -> None:
        """Make `sid` a child of the delegating session: announced and handed its task (when shown)."""
        self._children[sid] = delegation
        if delegation.subagents:
            parent = delegation.parent_sid
            title, about = delegation.agent, delegation.task[:200]
            await push(self.upstream, parent, subagent_update(sid, title=title, description=about, cancel=False))
            await push(self.upstream, parent, subagent_update(sid, state=running_state()))
            message = session_message(f"task-{delegation.call_id}", parent, sid, delegation.task)
            await push(self.upstream, sid, message)

    async def detach(self, sid: str, stop_reason: str, error: str | None = None) -> None:
        delegation = self._children.pop(sid, None)
        if delegation is not None and delegation.subagents:
            state = idle_state(stop_reason, error)
            await push(self.upstream, delegation.parent_sid, subagent_update(sid, state=state))

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        delegation = self._children.get(session_id)
        if delegation is None:
            log.warning("dropped a helper's update for %s, which is no child session in a delegation", session_id)
            return
        if delegation.subagents:
            if update.session_update not in CHILD_DROPPED:
                await push(self.upstream, session_id, update)
            return
        if update.session_update == "agent_message_chunk" and update.content.type == "text":
            delegation.said.append(update.content.text)
        elif update.session_update == "tool_call":
            delegation.tools.append(update.title)

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> Any:
        delegation = self._children.get(session_id)
        if delegation is None:  # fail closed: no question for a session that is no child
            raise PermissionError(f"no delegation has session {session_id}")
        if not delegation.subagents:
            session_id = delegation.parent_sid
            changes = {"tool_call_id": f"{delegation.call_id}/{tool_call.tool_call_id}"}
            if tool_call.title:
                changes["title"] = f"{delegation.agent}: {tool_call.title}"
            tool_call = tool_call.model_copy(update=changes)
        return await self.upstream.request_permission(
            session_id=session_id, tool_call=tool_call, options=options, **kwargs
        )

    def question_route(self, session_id: str, tool_call_id: str | None) -> QuestionRoute | None:
        """A helper's question (elicitation) goes where its work is shown: on its child session, or on the
        parent's under the delegate call (as its permission questions do)."""
        delegation = self._children.get(session_id)
        if delegation is None:
            return None
        if delegation.subagents:
            parent = route_of(self.upstream, delegation.parent_sid, None)
            return QuestionRoute(parent.rpc, session_id, tool_call_id) if parent is not None else None
        return route_of(self.upstream, delegation.parent_sid, delegation.call_id)  # the call the editor knows

    # fs/* and terminal/*: the same request, for the parent's session id.
    async def read_text_file(self, **kwargs: Any) -> Any:
        return await self.upstream.read_text_file(**self._parent(kwargs))

    async def write_text_file(self, **kwargs: Any) -> Any:
        return await self.upstream.write_text_file(**self._parent(kwargs))

    async def create_terminal(self, **kwargs: Any) -> Any:
        return await self.upstream.create_terminal(**self._parent(kwargs))

    async def terminal_output(self, **kwargs: Any) -> Any:
        return await self.upstream.terminal_output(**self._parent(kwargs))

    async def wait_for_terminal_exit(self, **kwargs: Any) -> Any:
        return await self.upstream.wait_for_terminal_exit(**self._parent(kwargs))

    async def kill_terminal(self, **kwargs: Any) -> Any:
        return await self.upstream.kill_terminal(**self._parent(kwargs))

    async def release_terminal(self, **kwargs: Any) -> Any:
        return await self.upstream.release_terminal(**self._parent(kwargs))

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await self.upstream.ext_method(method, params)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        await self.upstream.ext_notification(method, params)

    def _parent(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        delegation = self._children.get(str(kwargs.get("session_id")))
        if delegation is None:
            raise PermissionError(f"no delegation has session {kwargs.get('session_id')}")
        return {**kwargs, "session_id": delegation.parent_sid}
