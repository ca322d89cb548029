"""Foreign members: any ACP agent (a stdio process, a `crow serve`) as a member of a graph.

    member.py   ForeignAgent: an AcpAgent whose turns are relayed to the foreign agent
    link.py     one live connection to it: initialize, its sessions, where its updates go
    client.py   what crow answers it: permission questions (fail-closed), fs/* and terminal/*
    terminals.py its terminal/*: the editor's terminals, in crow's sandbox, under crow's permission decision
    side.py     MemberSide: the name, editor link and sessions that client.py and terminals.py serve with
    wire.py     the untrusted wire: malformed JSON-RPC ends the link, updates one at a time
    process.py  a stdio agent started under the MCP guard (it dies with crow), stderr to crow.log
    declared.py the ForeignAgent an [agents.NAME] table declares (graphs' member(NAME), delegate helpers)

Crow is the foreign agent's ACP client. Its session in crow is an ordinary crow session (the hand-off
and the reply are stored, bridges and the blackboard work); its own session id is kept in that
session's context, so a reload resumes it when it can.

Also in this room:

    nomodel.py  The model of a foreign member's crow session: none
    options.py  A foreign member's permission options as the user sees them: a name that says what its kind does
    relay.py    A foreign member's turn: the hand-off text given to its session, its stream shown, its reply stored
"""

from __future__ import annotations

from .link import RemoteTarget, StdioTarget, Target
from .member import ForeignAgent

__all__ = ["ForeignAgent", "RemoteTarget", "StdioTarget", "Target"]
