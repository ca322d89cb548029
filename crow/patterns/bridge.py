"""Bridges: an end_turn callback that hands what an agent concluded to the next agent.

What crosses a bridge is `session.get_summary()`: the text of the agent's last assistant
message of the turn, the answer it gave. Never the transcript, tool calls, tool output or
reasoning (other frameworks that passed everything grew each hand-off quadratically).
"""

from __future__ import annotations

from typing import Any

from crow_acp.api import CrowCallbacks, SessionAccess
from crow_acp.multi import Bridge, Node, hand_off


class AgentBridge(Bridge):
    """The end_turn hand-off to `next_agent`. It fires once per turn, and only after a normal end.

    After cancel, an error, a refusal or a step limit the chain stops where it is: the next agent
    would only get a half-finished answer. A slash command is no turn of the agent: nothing to hand.
    """

    def __init__(self, next_agent: Node) -> None:
        self._next = next_agent

    @property
    def next_agent(self) -> Node:
        return self._next

    async def __call__(
        self,
        session: SessionAccess,
        *,
        stop_reason: str = "end_turn",
        error: str | None = None,
        command: str | None = None,
        **_: Any,
    ) -> None:
        if stop_reason != "end_turn" or error or command:
            return
        summary = session.get_summary()
        if not summary.strip():
            await session.report(f"→ {self.next_agent.name}: nothing to hand over", status="failed")
            return
        await hand_off(session, self.next_agent, summary)

    def __repr__(self) -> str:
        return f"agent_bridge({self.next_agent.name!r})"


def agent_bridge(next_agent: Node) -> AgentBridge:
    """An end_turn callback that prompts `next_agent` (in its own session) with this agent's summary."""
    return AgentBridge(next_agent)


def add_agent_callback(callbacks: CrowCallbacks, next_agent: Node) -> CrowCallbacks:
    """A copy of `callbacks` with a bridge to `next_agent` at the end of end_turn; the input is untouched.

    Whoever gets the returned callbacks hands off TO `next_agent`. (pydantic's model_copy() is
    shallow and would share, and so mutate, the input's lists: copy_lists() makes new ones.)
    """
    copied = callbacks.copy_lists()
    copied.end_turn.append(agent_bridge(next_agent))
    return copied


def without_bridges(callbacks: CrowCallbacks) -> CrowCallbacks:
    copied = callbacks.copy_lists()
    copied.end_turn = [cb for cb in copied.end_turn if not isinstance(cb, Bridge)]
    return copied
