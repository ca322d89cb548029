"""A MultiAgent's graph: which agents take part, and what one editor session of it holds.

Members are found from the entry agent by walking bridges: any callback with a `next_agent`
attribute (crow.patterns.agent_bridge) is an edge. Patterns add members no bridge reaches
(a judge, a router's agents) explicitly. Nested MultiAgents contribute their members.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    from .agent import AcpAgent
    from .multi_run import Run
    from .session import Session

GRAPH_SESSIONS = "graph_sessions"
"""Context key: {agent name: that agent's session id}, stored in every member session."""
DEFAULT_SHARED = frozenset({GRAPH_SESSIONS, "blackboard", "plan"})


def is_multi(node: Any) -> bool:
    return bool(getattr(node, "is_multi_agent", False))


def entry_of(node: Any) -> AcpAgent:
    return node.entry if is_multi(node) else node


def bridges_of(agent: AcpAgent) -> list[Any]:
    """The agents this agent's end_turn bridges hand over to."""
    return [cb.next_agent for cb in agent.callbacks.all() if getattr(cb, "next_agent", None) is not None]


def collect_members(roots: Iterable[Any]) -> list[AcpAgent]:
    """Every agent reachable from roots, first root's entry first; a bridge cycle is a ValueError.

    A cycle cannot run: a bridge runs inside its agent's turn, which holds that agent's session,
    so a hand-off back to it would wait forever. Refusing it here names the loop at build time.
    """
    order: list[AcpAgent] = []
    state: dict[int, str] = {}

    def visit(node: Any, path: list[str]) -> None:
        if is_multi(node):
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
    """One editor session of a MultiAgent: a session on every member, one shared context."""

    editor_sid: str
    sessions: dict[str, str]
    """Agent name → that member's session id; the entry's id is the editor's."""
    agents: dict[str, AcpAgent]
    entry_name: str
    released: bool = False
    """False until the session/new|load response went out: updates are held until then."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    run: Run | None = None
    cancels: int = 0
    """session/cancel notifications so far; a prompt waiting for the lock compares it."""
    headed: set[tuple[str, Any]] = field(default_factory=set)
    """(agent, message id) pairs whose attribution header was sent."""

    @property
    def labelled(self) -> bool:
        return len(self.agents) > 1

    def session(self, name: str) -> Session:
        return self.agents[name].sessions[self.sessions[name]]

    def name_of(self, session_id: str) -> str | None:
        return next((name for name, sid in self.sessions.items() if sid == session_id), None)

    def save(self) -> None:
        for name in self.sessions:
            if (session := self.agents[name].sessions.get(self.sessions[name])) is not None:
                session.save()


class LinkedContext(dict):  # type: ignore[type-arg]
    """A member session's context whose shared keys are written through to every member at once.

    Only the shared keys are shared: other keys hold per-session bookkeeping (skills injected,
    compaction counters) that must stay with the session that wrote it. Values are mirrored,
    so each member's stored data holds the shared keys too and any one of them restores them.
    """

    def __init__(self, values: dict[str, Any], shared: frozenset[str], group: list[tuple[LinkedContext, Session]]):
        super().__init__(values)
        self.shared = shared
        self.group = group

    def __setitem__(self, key: str, value: Any) -> None:
        if key not in self.shared:
            return super().__setitem__(key, value)
        for context, session in self.group:
            dict.__setitem__(context, key, value)
            if context is not self:
                session.save()

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value


def link_contexts(sessions: list[Session], shared: frozenset[str], sids: dict[str, str]) -> None:
    """Give the sessions (entry first) one set of shared values; the entry's stored values win."""
    values: dict[str, Any] = {}
    for session in reversed(sessions):
        values.update({key: value for key, value in session.context.items() if key in shared})
    values[GRAPH_SESSIONS] = dict(sids)
    group: list[tuple[LinkedContext, Session]] = []
    for session in sessions:
        context = LinkedContext({**session.context, **values}, shared, group)
        session.data["context"] = context
        group.append((context, session))
        session.save()
