"""Multi-agent machinery: a graph of AcpAgents served to the editor as one agent.

    agent.py       MultiAgent: the ACP handlers of the whole graph
    graph.py       which agents take part (bridges are edges), one editor session's Graph
    blackboard.py  the shared context every member sees and stores
    run.py         one prompt's run: hand-offs, stop reasons, cancel; what patterns steer with
    conn.py        what members send the editor, attributed or on child sessions; session/load of a graph
    children.py    members as child sessions (ACP subagents): announcements, hand-off messages, state
    outlet.py      updates held until the editor knows the session, then sent
    members.py     the members' sessions of an editor session, resumed, forked, new or deleted
    served.py      who the graph serves: the caller, on every member; `_crow/share` through the entry
    member.py      Member: what a graph calls on a member agent (AcpAgent is one)
    foreign/       ForeignAgent: another ACP agent (stdio or `crow serve`) as a member

Patterns (chain, loop, supervisor, …) are in crow.patterns; they build on Run and Bridge.

May import: crow_acp.acp and everything below it. Never server, web or testing.

Also in this room:

    child_conn.py       The editor connection as a `delegate` helper sees it: each of its sessions is a child of the...
    delegate.py         The `delegate` tool: the model hands a self-contained task to a helper, which runs it in a...
    delegate_budget.py  The delegation budget: one editor prompt starts at most so many helper sessions, and its...
"""

from __future__ import annotations

from .agent import Driver, MultiAgent
from .blackboard import Blackboard, MemberContext
from .graph import GRAPH_SESSIONS, Bridge, Graph, Node
from .member import EntryMember, Member
from .run import Outcome, Prompt, Run, Step, hand_off, prompt_text

__all__ = [
    "GRAPH_SESSIONS",
    "Blackboard",
    "Bridge",
    "Driver",
    "EntryMember",
    "Graph",
    "Member",
    "MemberContext",
    "MultiAgent",
    "Node",
    "Outcome",
    "Prompt",
    "Run",
    "Step",
    "hand_off",
    "prompt_text",
]
