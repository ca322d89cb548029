"""The `delegate` tool: the model hands a self-contained task to a helper, which runs it in a fresh child session.

    [delegate]
    enabled = true
    agents = ["crow"]      # the helpers it may use, the first by default
    max_depth = 2          # levels of delegation below the editor's session

A helper is a `DelegateTarget`; an `AgentHelper` runs it on an AcpAgent it builds on first use, and
shuts it down when the delegating agent does (AcpAgent.close_at_shutdown: a `crow serve` connection
that closed takes its helpers' processes and model clients with it).
"crow" builds a crow sub-agent: the same configuration and store as the delegating agent, its own
context, the parent's cwd and directories and permission mode (never a more permissive one), and the
configured MCP servers (not the editor's). A name of `[agents]` builds that ACP agent as a
ForeignAgent (crow.patterns.make_member): the same seam, its turns relayed to the other agent, its
permission questions asked of the editor under the parent's mode (multi/foreign/client.py). The
`Resolver` the agent was given maps names to helpers (crow/presets.py). The child's final answer is
the tool's result; a helper that fails (crashes, cannot start) gives its reason as the result. The
tool itself changes nothing (what the child does is asked and gated in the child), so it is
read-only: several calls of one reply run at once, as the loop runs every reply's calls. Cancelling
the parent's turn cancels the call, and so the child's turn.

The child is a real session, stored under the agent name "crow-helper" (a foreign helper: its own
name), so not in the editor's session list; the parent's context "delegations" links it (its id,
helper, call), and a reload for an editor that opted in to subagents replays it under its own id.
child_conn.py decides what the editor sees live.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

import anyio
from acp import RequestError

from ..acp.agent import AcpAgent
from ..acp.rpc.shapes.subagents import subagent_update
from ..acp.updates.shapes import replay_updates
from ..errors import CrowError
from ..events import ToolResult
from ..plugin.hooks import Callback
from ..plugin.session import SessionAccess, ToolContext
from ..tools import FunctionTool
from .child_conn import ChildConnection, Delegation, push
from .delegate_budget import BudgetedModel, budget_of, enter, leave

NAME = "delegate"
LINKS = "delegations"
"""Parent session context key: [{"session", "agent", "call"}] of its delegations' child sessions."""
DESCRIPTION = (
    "Hand a self-contained task to a helper agent that starts with a fresh, empty context and the same "
    "workspace. It sees nothing of this conversation: put everything it needs in `task`, and say what to "
    "answer with. Its final answer comes back as this tool's result. Several delegate calls in one reply "
    "run at the same time; use it for independent side tasks (research, a review, a focused change) to "
    "keep this context small."
)


class DelegateTarget(Protocol):
    """A helper a delegation can run on: crow's own or another ACP agent (each an AgentHelper)."""

    name: str

    async def run(self, delegation: Delegation) -> tuple[str, str]:
        """Run `delegation.task` in a fresh child session of `delegation.parent_sid`: (final answer, child
        session id). A failed child raises RequestError; cancellation stops the child's work."""
        ...


Resolver = Callable[[str], DelegateTarget | None]
"""A helper's name → the target that runs it (None: unknown here)."""


class AgentHelper:
    """A helper named `name`: one AcpAgent from `make` (a crow sub-agent, or a ForeignAgent relaying to
    another ACP agent), built on first use, serving every delegation of one agent."""

    def __init__(
        self, name: str, make: Callable[[], AcpAgent], upstream: Callable[[], Any], initialize: dict[str, Any]
    ) -> None:
        self.name = name
        self._make = make
        self._upstream = upstream
        self._initialize = initialize
        self._agent: AcpAgent | None = None
        self._conn: ChildConnection | None = None
        self._lock = asyncio.Lock()

    async def _ready(self) -> tuple[AcpAgent, ChildConnection]:
        async with self._lock:
            if self._agent is None or self._conn is None:
                agent, conn = self._make(), ChildConnection(self._upstream())
                agent.on_connect(conn)
                await agent.initialize(**self._initialize)
                self._agent, self._conn = agent, conn
            return self._agent, self._conn

    async def run(self, delegation: Delegation) -> tuple[str, str]:
        agent, conn = await self._ready()
        directories = delegation.directories or None
        sid = str((await agent.new_session(delegation.cwd, [], directories)).session_id)
        agent.set_mode(sid, delegation.mode)  # the parent's: never more permissive
        if (budget := delegation.budget) is not None:  # its model calls, and its own delegations, count
            session = agent.sessions[sid]
            session.model = BudgetedModel(session.model, budget)
            enter(sid, budget)
        await conn.attach(sid, delegation)
        stop, error = "cancelled", None
        try:
            stop = (await agent.prompt(prompt=[{"type": "text", "text": delegation.task}], session_id=sid)).stop_reason
        except RequestError as exc:
            stop, error = "error", str(exc)
            raise
        finally:
            with anyio.CancelScope(shield=True):  # a cancelled parent turn: the child's stops too, and is closed
                if stop == "cancelled":
                    await agent.cancel(session_id=sid)
                await conn.detach(sid, stop, error)
                answer = agent.access(sid).get_summary() if agent.is_open(sid) else ""
                await agent.close_session(session_id=sid)
                leave(sid)
        return answer, sid

    async def shutdown(self) -> None:
        if self._agent is not None:
            await self._agent.shutdown()


def delegate_callback(parent: AcpAgent, agents: list[str], resolve: Resolver) -> Callback:
    """The begin_session callback that offers `delegate`; on session/load, for an editor that opted in to
    subagents, it announces each stored helper session and replays its history under its own id."""
    tool = delegate_tool(parent, agents, resolve)

    async def offer(session: SessionAccess, *, loaded: bool = False, **_: Any) -> None:
        session.add_tool(tool)
        if loaded and parent.editor.features.subagents and parent.editor.conn is not None:
            await replay_delegations(parent, session)

    return offer


def budget_reset(session: SessionAccess, **_: Any) -> None:
    """end_turn (and end_session): the next prompt of this session gets a new delegation budget."""
    leave(session.session_id)


async def replay_delegations(parent: AcpAgent, session: SessionAccess) -> None:
    conn = parent.editor.conn
    for link in session.get_context(LINKS) or []:
        child, name = str(link.get("session")), str(link.get("agent"))
        entries = await parent.store.load(child)
        task = next((e.message.get("content") for e in entries if e.message["role"] == "user"), None)
        about = task[:200] if isinstance(task, str) else None
        await push(conn, session.session_id, subagent_update(child, title=name, description=about, cancel=False))
        for update in replay_updates(entries):
            await push(conn, child, update)


def delegate_tool(parent: AcpAgent, agents: list[str], resolve: Resolver) -> FunctionTool:
    """The `delegate` tool of `parent`'s sessions; `agents` are the helpers it offers, the first by default."""
    parameters = {
        "type": "object",
        "properties": {
            "task": {"type": "string", "description": "The whole task, self-contained, and what to answer with."},
            "agent": {"type": "string", "enum": agents, "description": f"The helper (default {agents[0]})."},
        },
        "required": ["task"],
    }

    async def handler(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        task, name = arguments.get("task"), arguments.get("agent") or agents[0]
        if not isinstance(task, str) or not task.strip():
            return ToolResult("delegate needs a `task`: the whole task, self-contained", is_error=True)
        target = resolve(name) if name in agents else None
        if target is None:
            return ToolResult(f"no helper {name!r}; available: {', '.join(agents)}", is_error=True)
        session = context.session
        settings = parent.config.delegate
        budget = budget_of(session.session_id, settings.max_helpers, settings.max_helper_calls)
        if (refused := budget.take_helper()) is not None:
            return ToolResult(refused, is_error=True)
        delegation = Delegation(
            parent_sid=session.session_id,
            call_id=context.call_id,
            agent=name,
            task=task,
            mode=parent.mode_of(session.session_id),
            cwd=session.cwd,
            directories=list(session.additional_directories),
            subagents=parent.editor.features.subagents,
            budget=budget,
        )
        try:
            answer, child = await target.run(delegation)
        except (RequestError, CrowError) as exc:  # a helper that failed or could not start: the parent goes on
            return ToolResult(f"the helper failed: {exc}", is_error=True)
        links = list(session.get_context(LINKS) or [])
        session.set_context(LINKS, [*links, {"session": child, "agent": name, "call": context.call_id}])
        return ToolResult(answer or "(the helper gave no answer)", content=summary(delegation, answer))

    title = lambda arguments: f"delegate: {str(arguments.get('task', ''))[:60]}"  # noqa: E731
    return FunctionTool(NAME, DESCRIPTION, parameters, handler, read_only=True, kind="other", title=title)


def summary(delegation: Delegation, answer: str) -> list[Any] | None:
    """What the delegate call shows a client without child sessions: the child's tool calls and its answer."""
    if delegation.subagents:
        return None
    from acp import text_block, tool_content

    steps = "".join(f"- {title}\n" for title in delegation.tools)
    text = f"**{delegation.agent}** ran the task.\n\n" + (f"Tool calls:\n{steps}\n" if steps else "")
    return [tool_content(text_block(text + f"Answer:\n{answer}"))]
