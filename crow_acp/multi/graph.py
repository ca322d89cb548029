"""A MultiAgent's graph: which agents take part, and what one editor session of it holds.

Members are found from the entry agent by walking bridges: every callback that is a `Bridge`
(crow.patterns.agent_bridge makes them) is an edge. Patterns add members no bridge reaches
(a judge, a router's agents) explicitly. Nested MultiAgents contribute their members.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from acp import RequestError

from ..acp.agent import AcpAgent
from ..plugin.blackboard import TrackedDict
from .blackboard import Blackboard

if TYPE_CHECKING:
    from ..plugin.session import SessionAccess


class Composite(Protocol):
    """A graph used as a node of another (a MultiAgent): its name, where it starts, who takes part.
    How a run drives one is run.Drivable."""

    name: str
    entry: AcpAgent
    members: list[AcpAgent]


class Cancellable(Protocol):
    """A graph session's run in progress, as the session sees it."""

    def cancel(self) -> None: ...


Node = AcpAgent | Composite
"""What a graph is built from, and what a bridge or a pattern hands over to."""
GRAPH_SESSIONS = "graph_sessions"
"""Context key: {agent name: that agent's session id}, stored in every member session."""
DEFAULT_SHARED = frozenset({GRAPH_SESSIONS, "blackboard", "plan"})


class Bridge(ABC):
    """An end_turn callback that hands the turn's result to another agent: an edge of the graph.

    MultiAgent finds its members by walking the bridges in its agents' callbacks.
    crow.patterns.AgentBridge is the one crow ships; subclass this for your own hand-off.
    """

    @property
    @abstractmethod
    def next_agent(self) -> Node:
        """The agent (or graph) this bridge hands over to."""

    @abstractmethod
    async def __call__(self, session: SessionAccess, **kwargs: Any) -> None:
        """The end_turn callback: hand the turn's result over (or not, after a cancel or an error)."""


def entry_of(node: Node) -> AcpAgent:
    return node if isinstance(node, AcpAgent) else node.entry


def bridges_of(agent: AcpAgent) -> list[Node]:
    """The agents this agent's bridges hand over to."""
    return [callback.next_agent for callback in agent.callbacks.all() if isinstance(callback, Bridge)]


def collect_members(roots: Iterable[Node]) -> list[AcpAgent]:
    """Every agent reachable from roots, first root's entry first; a bridge cycle is a ValueError.

    A cycle cannot run: a bridge runs inside its agent's turn, which holds that agent's session,
    so a hand-off back to it would wait forever. Refusing it here names the loop at build time.
    """
    order: list[AcpAgent] = []
    state: dict[int, str] = {}

    def visit(node: Node, path: list[str]) -> None:
        if not isinstance(node, AcpAgent):
            for i, member in enumerate(node.members):
                visit(member, path if i == 0 else [])
            return
        mark = state.get(id(node))
        if mark == "done":
            return
        if mark == "active":
            raise ValueError(f"agent graph has a cycle: {' → '.join([*path, node.name])}")
        state[id(node)] = "active"
        order.append(node)
        for nxt in bridges_of(node):
            if nxt is node:
                raise ValueError(f"agent {node.name!r} bridges to itself")
            visit(nxt, [*path, node.name])
        state[id(node)] = "done"

    for root in roots:
        visit(root, [])
    _unique_names(order)
    return order


def _unique_names(agents: list[AcpAgent]) -> None:
    """Members are told apart by name (session list filter, attribution, graph_sessions): dedupe."""
    seen: set[str] = set()
    for agent in agents:
        name, n = agent.name, 2
        while name in seen:
            name, n = f"{agent.name}-{n}", n + 1
        agent.name = name
        seen.add(name)


@dataclass(eq=False)
class Graph:
    """One editor session of a MultiAgent: a session on every member, one shared blackboard."""

    editor_sid: str
    sessions: dict[str, str]
    """Agent name → that member's session id; the entry's id is the editor's."""
    agents: dict[str, AcpAgent]
    entry_name: str
    blackboard: Blackboard
    released: bool = False
    """False until the session/new|load response went out: updates are held until then."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    run: Cancellable | None = None
    cancels: int = 0
    """session/cancel notifications so far; a prompt waiting for the lock compares it."""
    headed: set[tuple[str, Any]] = field(default_factory=set)
    """(agent, message id) pairs whose attribution header was sent."""
    children: bool = False
    """The editor opted in to subagents: every member but the entry is a child session (children.py)."""

    @classmethod
    def open(cls, agents: list[AcpAgent], sids: dict[str, str], shared: frozenset[str]) -> Graph:
        """The graph of the members' open sessions (entry first), their contexts joined on one blackboard.

        The shared values stored with the entry win over the other members' (any one restores them).
        """
        values: dict[str, Any] = {}
        for agent in reversed(agents):
            access = agent.access(sids[agent.name])
            values.update(
                {key: _stored(value) for key in shared if (value := access.get_context(key, _NONE)) is not _NONE}
            )
        values[GRAPH_SESSIONS] = dict(sids)
        board = Blackboard(shared, values)
        for agent in agents:
            agent.join_blackboard(sids[agent.name], board)
        named = {agent.name: agent for agent in agents}
        return cls(sids[agents[0].name], dict(sids), named, agents[0].name, board)

    @property
    def labelled(self) -> bool:
        return len(self.agents) > 1 and not self.children

    @property
    def entry(self) -> AcpAgent:
        return self.agents[self.entry_name]

    @property
    def entry_sid(self) -> str:
        return self.sessions[self.entry_name]

    def access(self, name: str) -> SessionAccess:
        return self.agents[name].access(self.sessions[name])

    def name_of(self, session_id: str) -> str | None:
        return next((name for name, sid in self.sessions.items() if sid == session_id), None)

    async def flush(self) -> None:
        """Every member's writes durable: a blackboard change reached every member's store queue."""
        self.blackboard.unflushed = False
        for name, sid in self.sessions.items():
            await self.agents[name].flush_session(sid)

    def save(self) -> None:
        for name, sid in self.sessions.items():
            if self.agents[name].is_open(sid):
                self.agents[name].save_session(sid)


Stored = Callable[[AcpAgent, str], Awaitable[str]]
"""What to do with a member's stored session of a graph (resume it, fork it): returns the id to use."""


async def stored_members(entry: AcpAgent, session_id: str) -> dict[str, str]:
    """{member name: session id} as the entry's stored session of the graph names them; {} if none.
    A member's (child) session is no graph: RequestError, as for an unknown session."""
    record = await entry.store.get(session_id)
    if record is not None and record.data.get("agent", entry.name) != entry.name:
        raise RequestError.resource_not_found(session_id)
    known = (record.data.get("context") or {}).get(GRAPH_SESSIONS) if record is not None else None
    return {str(name): str(sid) for name, sid in (known or {}).items()}


async def member_sessions(
    members: list[AcpAgent], session_id: str, stored: Stored, new: Callable[[AcpAgent], Awaitable[str]]
) -> dict[str, str]:
    """{member name: session id} for the graph whose editor session is `session_id`: `stored` for each
    member's session the entry's record names, `new` for a member that has none (added since)."""
    entry = members[0]
    record = await entry.store.get(session_id)
    if record is None or record.data.get("agent", entry.name) != entry.name:  # a member's (child) session is no graph
        raise RequestError.resource_not_found(session_id)
    known = (record.data.get("context") or {}).get(GRAPH_SESSIONS) or {}

    async def one(member: AcpAgent) -> str:
        sid = session_id if member is entry else known.get(member.name)
        if sid and await member.store.get(sid) is not None:
            return await stored(member, sid)
        return await new(member)

    sids = await asyncio.gather(*(one(member) for member in members))
    return {member.name: sid for member, sid in zip(members, sids, strict=True)}


_NONE: Any = object()


def _stored(value: Any) -> Any:
    """The stored value behind what get_context returned (the blackboard's dict, not its view)."""
    return value.data if isinstance(value, TrackedDict) else value
