"""loop(worker, judge, max_iterations): work, let a judge decide continue or stop, repeat.

The judge is a decision agent, not a worker (seed 000: CodingLoop.shouldContinue calls the
judge). Its verdict is the first line of its reply:

    STOP: <why the task is done>
    CONTINUE: <what the worker must do next>

(JSON {"decision": "stop"|"continue", "reason": "..."} is accepted too.) A reply without a
verdict stops the loop, and says so: a confused judge must not burn iterations. The verdict
and its reason show in the editor as a "Judge: …" tool call. After `max_iterations` worker
passes without a STOP the loop ends with stop reason max_turn_requests.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from crow_acp.multi import MultiAgent, Outcome, Prompt, Run, prompt_text

_VERDICT = re.compile(r"^[\W_]*(STOP|CONTINUE)\b[\W_]*(.*)$", re.IGNORECASE)


@dataclass(frozen=True)
class Verdict:
    stop: bool
    reason: str
    clear: bool = True
    """False when the reply held no verdict (the loop then stops)."""


def parse_verdict(text: str) -> Verdict:
    text = text.strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and str(data.get("decision", "")).lower() in ("stop", "continue"):
        return Verdict(data["decision"].lower() == "stop", str(data.get("reason", "")))
    first = next((line for line in text.splitlines() if line.strip()), "")
    if match := _VERDICT.match(first.strip()):
        rest = "\n".join(text.splitlines()[1:]).strip()
        reason = match.group(2).strip() or rest
        return Verdict(match.group(1).upper() == "STOP", reason)
    return Verdict(True, f"The judge gave no STOP/CONTINUE verdict: {first[:200]}", clear=False)


def judge_request(task: str, result: str, iteration: int, limit: int) -> str:
    return (
        f"Task:\n{task}\n\nResult of pass {iteration} of at most {limit}:\n{result}\n\n"
        "Is the task done? Answer with a first line of `STOP: <why it is done>` "
        "or `CONTINUE: <what must be done next>`."
    )


def loop(worker: Any, judge: Any, max_iterations: int = 3, *, name: str | None = None) -> MultiAgent:
    """The worker (an agent, or a pattern such as sequential(coder, reviewer)) runs, then the judge decides."""
    if max_iterations < 1:
        raise ValueError("max_iterations must be at least 1")

    async def drive(run: Run, prompt: Prompt, source: str | None) -> Outcome:
        task = prompt_text(prompt)
        work = await run.ask(worker, prompt, source=source)
        for iteration in range(1, max_iterations + 1):
            if work.stop_reason != "end_turn":
                return work
            judged = await run.ask(
                judge, judge_request(task, work.summary, iteration, max_iterations), source=work.agent
            )
            if judged.stop_reason != "end_turn":
                return judged
            verdict = parse_verdict(judged.summary)
            decision = "stop" if verdict.stop else "continue"
            await run.report(
                f"Judge: {decision} ({iteration}/{max_iterations})",
                text=verdict.reason,
                status="completed" if verdict.clear else "failed",
            )
            if verdict.stop:
                return work
            if iteration == max_iterations:
                await run.report(f"Loop stopped after {max_iterations} passes", status="failed", text=verdict.reason)
                return Outcome("max_turn_requests", work.summary, work.agent, steps=work.steps)
            work = await run.ask(worker, f"The judge asks for another pass: {verdict.reason}", source=judged.agent)
        return work

    return MultiAgent(entry_agent=worker, members=[judge], driver=drive, name=name)
