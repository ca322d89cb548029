"""chain(a, b, c): bridges a→b→c; sequential(a, b): the same order, steered from outside."""

from __future__ import annotations

from typing import Any

from crow_acp.multi import MultiAgent, Outcome, Prompt, Run

from .bridge import add_agent_callback, without_bridges


def chain(*agents: Any, name: str | None = None) -> MultiAgent:
    """Wire a→b→…: each agent's end_turn hands its summary to the next. Returns the served graph.

    Built backwards, as the design essay does: the last agent gets no bridge, then each agent
    gets a bridge TO its successor. Bridges an agent had before are replaced, so the wiring is
    exactly the order given. An agent given twice would be a cycle: ValueError.
    """
    if not agents:
        raise ValueError("chain() needs at least one agent")
    if len({id(agent) for agent in agents}) != len(agents):
        raise ValueError("chain() got the same agent twice: a cycle, which a bridge cannot run")
    successor = None
    for agent in reversed(agents):
        callbacks = without_bridges(agent.callbacks)
        if successor is not None:
            callbacks = add_agent_callback(callbacks, successor)
        agent.set_callbacks(callbacks)
        successor = agent
    return MultiAgent(entry_agent=agents[0], name=name)


def sequential(*agents: Any, name: str | None = None) -> MultiAgent:
    """Run the agents in order, each on the previous one's summary, without touching their callbacks.

    Unlike chain() the agents stay reusable elsewhere; members may be patterns themselves.
    """
    if not agents:
        raise ValueError("sequential() needs at least one agent")

    async def drive(run: Run, prompt: Prompt, source: str | None) -> Outcome:
        outcome = await run.ask(agents[0], prompt, source=source)
        for agent in agents[1:]:
            if outcome.stop_reason != "end_turn":
                return outcome
            outcome = await run.ask(agent, outcome.summary, source=outcome.agent)
        return outcome

    return MultiAgent(entry_agent=agents[0], members=agents[1:], driver=drive, name=name)
