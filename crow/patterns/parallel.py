"""parallel(agents, fan_in): the same request to every agent at once, then one agent combines the results.

Members run concurrently in an anyio task group, each in its own session. A member that fails
(a model error, a refusal) is reported as a failed tool call and its failure is part of what
the fan-in agent gets; the other members' results are kept. The fan-in agent is the entry: the
user's request is recorded in its session, and its answer is the run's answer.
"""

from __future__ import annotations

from typing import Any

import anyio

from crow_acp.multi import MultiAgent, Outcome, Prompt, Run, prompt_text


def fan_in_request(task: str, results: list[tuple[str, Outcome]]) -> str:
    parts = []
    for name, outcome in results:
        if outcome.error or outcome.stop_reason != "end_turn":
            parts.append(f"## {name} (failed: {outcome.error or outcome.stop_reason})")
        else:
            parts.append(f"## {name}\n{outcome.summary}")
    return f"Request:\n{task}\n\nThe team worked on it in parallel. Their results:\n\n" + "\n\n".join(parts)


def parallel(agents: list[Any], fan_in: Any, *, name: str | None = None) -> MultiAgent:
    if not agents:
        raise ValueError("parallel() needs at least one agent")
    if len({id(agent) for agent in [*agents, fan_in]}) != len(agents) + 1:
        raise ValueError("parallel() got an agent twice; each member needs its own session")

    async def drive(run: Run, prompt: Prompt, source: str | None) -> Outcome:
        if prompt is run.user_prompt:
            run.record_user()
        results: dict[str, Outcome] = {}

        async def one(agent: Any) -> None:
            results[agent.name] = await run.ask(agent, prompt, source=source)

        async with anyio.create_task_group() as group:
            for agent in agents:
                group.start_soon(one, agent)
        if run.cancelled:
            return Outcome("cancelled")
        ordered = [(agent.name, results[agent.name]) for agent in agents]  # a failure shows on its hand-off
        return await run.ask(fan_in, fan_in_request(prompt_text(prompt), ordered), source=source)

    return MultiAgent(entry_agent=fan_in, members=agents, driver=drive, name=name)
