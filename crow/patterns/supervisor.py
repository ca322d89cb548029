"""supervisor(agents, router): a router model picks who works next from the shared state (seed 003).

The state is the blackboard key "supervisor" in the shared context, persisted with the session:

    {"task": the user's request, "status": "working" | "complete" | "stopped",
     "steps": [{"agent": name, "output": that agent's summary}, ...]}

Each round the router (a side call on the router agent's model; its history stays untouched)
sees the request, the team and the work so far, and answers with one agent's name or DONE.
The chosen agent gets the request plus every earlier output (Bob sees Emma's PRD). The run ends
when the router says DONE, when `done(state)` holds, or after `max_iterations` agent turns
(stop reason max_turn_requests).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from crow_acp.multi import MultiAgent, Outcome, Prompt, Run, prompt_text

STATE = "supervisor"
ROUTER_SYSTEM = (
    "You coordinate a team of agents. Given the user's request and the work done so far, name the "
    "agent that should work next, or answer DONE when the request is fully handled. Answer with the "
    "agent's name or DONE only."
)


def routing_request(state: dict[str, Any], team: dict[str, str]) -> str:
    members = "\n".join(f"- {name}{': ' + about if about else ''}" for name, about in team.items())
    return (
        f"User request:\n{state['task']}\n\nTeam:\n{members}\n\n"
        f"Work done so far:\n{_work(state) or '(none yet)'}\n\n"
        "Who works next? Answer with one name from the team, or DONE."
    )


def agent_request(state: dict[str, Any]) -> str:
    work = _work(state)
    return f"{state['task']}\n\nWork so far by the team:\n{work}" if work else state["task"]


def _work(state: dict[str, Any]) -> str:
    return "\n\n".join(f"## {step['agent']}\n{step['output']}" for step in state["steps"])


def parse_choice(answer: str, names: Iterable[str]) -> str | None:
    """The agent name the router chose, "DONE", or None when the answer names neither."""
    words = answer.strip().strip("`*\"'.").split()
    word = words[0].strip("`*\"'.,:;") if words else ""
    if word.upper() in ("DONE", "COMPLETE"):
        return "DONE"
    return next((name for name in names if name.lower() == word.lower()), None)


def supervisor(
    agents: list[Any],
    router: Any,
    *,
    max_iterations: int = 5,
    done: Callable[[dict[str, Any]], bool] | None = None,
    descriptions: dict[str, str] | None = None,
    name: str | None = None,
) -> MultiAgent:
    """A team steered by `router` (an AcpAgent whose model routes); the router's sessions are the graph's."""

    async def drive(run: Run, prompt: Prompt, source: str | None) -> Outcome:
        if prompt is run.user_prompt:
            run.record_user()
        team = {agent.name: (descriptions or {}).get(agent.name, "") for agent in agents}
        state: dict[str, Any] = {"task": prompt_text(prompt), "status": "working", "steps": []}
        run.set_context(STATE, state)
        last = Outcome("end_turn", "", router.name)
        for _ in range(max_iterations):
            if done is not None and done(state):
                return _finish(run, state, "complete", last)
            answer = await run.side_prompt(router, routing_request(state, team), system=ROUTER_SYSTEM)
            if answer is None:
                return Outcome("cancelled", last.summary, last.agent)
            choice = parse_choice(answer, team)
            if choice == "DONE":
                await run.report("Supervisor: done", text=f"after {len(state['steps'])} step(s)")
                return _finish(run, state, "complete", last)
            if choice is None:
                await run.report(
                    "Supervisor: no agent chosen", status="failed", text=f"The router answered {answer!r}."
                )
                return _finish(run, state, "stopped", last)
            last = await run.ask(_by_name(agents, choice), agent_request(state), source=router.name)
            if last.stop_reason != "end_turn":
                return last
            state["steps"].append({"agent": last.agent, "output": last.summary})
            run.set_context(STATE, state)
        await run.report(f"Supervisor stopped after {max_iterations} steps", status="failed")
        _finish(run, state, "stopped", last)
        return Outcome("max_turn_requests", last.summary, last.agent, steps=last.steps)

    return MultiAgent(entry_agent=router, members=agents, driver=drive, name=name, shared_keys=[STATE])


def _finish(run: Run, state: dict[str, Any], status: str, last: Outcome) -> Outcome:
    state["status"] = status
    run.set_context(STATE, state)
    return last


def _by_name(agents: list[Any], name: str) -> Any:
    return next(agent for agent in agents if agent.name == name)
