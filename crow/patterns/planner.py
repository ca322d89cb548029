"""planner_executor(planner, executor): a plan made through tools, worked through step by step (seed 002).

The planner gets `create_plan` and `update_plan`, the executor `mark_step`. The plan lives in the
shared context under "plan" (the seed's TaskManager), so both agents see one plan, it survives
restarts, and every change is sent to the editor as an ACP `plan` update (`plan_update` under the
plan id "planner" for an editor with plan operations; create_plan replaces that plan):

    {"title": str, "steps": [{"content": str, "status": "pending"|"in_progress"|"completed"|"blocked",
                              "notes": str}, ...]}

ACP plan entries know pending, in_progress and completed only: a blocked step is shown as
pending with "[blocked] " before its text (and its notes after it).
"""

from __future__ import annotations

from typing import Any

from crow_acp.api import CrowCallbacks, SessionAccess, ToolContext
from crow_acp.events import PlanEntry
from crow_acp.multi import MultiAgent, Outcome, Prompt, Run, prompt_text
from crow_acp.tools import FunctionTool

PLAN = "plan"
PLAN_ID = "planner"
"""The plan id the editor knows the pattern's plan by (write_plan's is "plan")."""
STATUSES = ("pending", "in_progress", "completed", "blocked")


def plan_entries(plan: dict[str, Any]) -> list[PlanEntry]:
    entries = []
    for step in plan.get("steps", []):
        status, content = step["status"], step["content"]
        if status == "blocked":
            status, content = "pending", f"[blocked] {content}" + (f" — {step['notes']}" if step.get("notes") else "")
        entries.append(PlanEntry(content, status))
    return entries


def plan_text(plan: dict[str, Any]) -> str:
    lines = [plan.get("title") or "Plan"]
    for i, step in enumerate(plan.get("steps", []), 1):
        notes = f" ({step['notes']})" if step.get("notes") else ""
        lines.append(f"{i}. [{step['status']}] {step['content']}{notes}")
    return "\n".join(lines)


async def _save(session: SessionAccess, plan: dict[str, Any]) -> str:
    session.set_context(PLAN, plan)
    await session.update_plan(plan_entries(plan), plan_id=PLAN_ID)
    return plan_text(plan)


async def _create(args: dict[str, Any], ctx: ToolContext) -> str:
    steps = [{"content": str(text), "status": "pending", "notes": ""} for text in args.get("steps", [])]
    return await _save(ctx.session, {"title": args.get("title", ""), "steps": steps})


async def _update(args: dict[str, Any], ctx: ToolContext) -> str:
    """Replace the steps; a step whose text is unchanged keeps its status and notes."""
    old = {step["content"]: step for step in (ctx.session.get_context(PLAN) or {}).get("steps", [])}
    steps = [
        old.get(str(text), {"content": str(text), "status": "pending", "notes": ""}) for text in args.get("steps", [])
    ]
    title = args.get("title") or (ctx.session.get_context(PLAN) or {}).get("title", "")
    return await _save(ctx.session, {"title": title, "steps": steps})


async def _mark(args: dict[str, Any], ctx: ToolContext) -> str:
    plan = ctx.session.get_context(PLAN)
    if not plan or not plan.get("steps"):
        return "There is no plan yet."
    index, status = int(args.get("step_index", 0)), args.get("status")
    if not 1 <= index <= len(plan["steps"]) or status not in STATUSES:
        return f"step_index must be 1..{len(plan['steps'])} and status one of {', '.join(STATUSES)}."
    plan["steps"][index - 1].update(status=status, notes=args.get("notes") or plan["steps"][index - 1].get("notes", ""))
    return await _save(ctx.session, plan)


_STEPS = {"type": "array", "items": {"type": "string"}, "description": "The steps, in order, one short sentence each."}
# The plan tools touch only the shared plan, never the workspace: read_only spares permission prompts.
CREATE_PLAN = FunctionTool(
    "create_plan",
    "Create the plan for the task: a title and the ordered steps.",
    {"type": "object", "properties": {"title": {"type": "string"}, "steps": _STEPS}, "required": ["steps"]},
    _create,
    read_only=True,
    kind="think",
    title=lambda a: f"Plan: {a.get('title') or 'create'}",
)
UPDATE_PLAN = FunctionTool(
    "update_plan",
    "Replace the plan's steps (unchanged steps keep their status).",
    {"type": "object", "properties": {"title": {"type": "string"}, "steps": _STEPS}, "required": ["steps"]},
    _update,
    read_only=True,
    kind="think",
    title=lambda a: "Update plan",
)
MARK_STEP = FunctionTool(
    "mark_step",
    "Mark a plan step in_progress, completed or blocked (step_index is 1-based, as in the plan).",
    {
        "type": "object",
        "properties": {
            "step_index": {"type": "integer", "minimum": 1},
            "status": {"type": "string", "enum": ["in_progress", "completed", "blocked"]},
            "notes": {"type": "string"},
        },
        "required": ["step_index", "status"],
    },
    _mark,
    read_only=True,
    kind="think",
    title=lambda a: f"Step {a.get('step_index')}: {a.get('status')}",
)


class PlanTools:
    """begin_session callback offering plan tools; on load it shows the stored plan again."""

    def __init__(self, *tools: FunctionTool, show_on_load: bool = False) -> None:
        self.tools = tools
        self.show_on_load = show_on_load

    async def __call__(self, session: SessionAccess, *, loaded: bool = False, **_: Any) -> None:
        for tool in self.tools:
            session.add_tool(tool)
        if loaded and self.show_on_load and (plan := session.get_context(PLAN)):
            await session.update_plan(plan_entries(plan), plan_id=PLAN_ID)


def planner_tools() -> PlanTools:
    return PlanTools(CREATE_PLAN, UPDATE_PLAN, show_on_load=True)


def executor_tools() -> PlanTools:
    return PlanTools(MARK_STEP)


def _with(agent: Any, tools: PlanTools) -> None:
    if not any(isinstance(cb, PlanTools) for cb in agent.callbacks.begin_session):
        agent.set_callbacks(agent.callbacks + CrowCallbacks(begin_session=[tools]))


def executor_request(task: str, plan: dict[str, Any]) -> str:
    return (
        f"Task:\n{task}\n\nPlan:\n{plan_text(plan)}\n\nWork through the open steps in order. Call mark_step "
        "with in_progress when you start a step, and completed (or blocked, with notes) when it is done."
    )


def replan_request(plan: dict[str, Any]) -> str:
    return (
        f"Not every step is done:\n{plan_text(plan)}\n\nRevise the plan with update_plan so the task can be finished."
    )


def planner_executor(planner: Any, executor: Any, *, max_rounds: int = 2, name: str | None = None) -> MultiAgent:
    """The planner plans, the executor executes; open steps after a pass go back to the planner (≤ max_rounds)."""
    _with(planner, planner_tools())
    _with(executor, executor_tools())

    async def drive(run: Run, prompt: Prompt, source: str | None) -> Outcome:
        task = prompt_text(prompt)
        out = await run.ask(planner, prompt, source=source)
        for round_ in range(1, max_rounds + 1):
            plan = run.get_context(PLAN)
            if out.stop_reason != "end_turn":
                return out
            if not plan or not plan.get("steps"):
                await run.report("The planner made no plan", status="failed")
                return out
            out = await run.ask(executor, executor_request(task, plan), source=out.agent)
            plan = run.get_context(PLAN)
            if out.stop_reason != "end_turn" or all(s["status"] == "completed" for s in plan["steps"]):
                return out
            if round_ < max_rounds:
                out = await run.ask(planner, replan_request(plan), source=out.agent)
        await run.report("Plan not finished", status="failed", text=plan_text(run.get_context(PLAN) or {}))
        return out

    return MultiAgent(entry_agent=planner, members=[executor], driver=drive, name=name)
