"""The plan tool: the model keeps a to-do list, and the editor shows it as ACP `plan` updates.

Read-only and never asks: it only changes what the editor shows. Each call sends the whole list
(an ACP plan update replaces the editor's plan), and session/load replays the calls, so the plan
survives a restart.
"""

from __future__ import annotations

from typing import Any

from ..api import ToolContext
from ..events import PlanEntry, ToolResult
from ..tools import FunctionTool
from ..util.secrets import redact

NAME = "write_plan"  # not update_plan: the planner pattern has its own tool by that name
MAX_ENTRIES = 50
MAX_TEXT = 500
STATUSES = ("pending", "in_progress", "completed")
PRIORITIES = ("high", "medium", "low")
PARAMETERS = {
    "type": "object",
    "properties": {
        "entries": {
            "type": "array",
            "description": "The whole plan, in order; it replaces the previous one.",
            "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "description": "One step, in a few words."},
                    "status": {"type": "string", "enum": list(STATUSES)},
                    "priority": {"type": "string", "enum": list(PRIORITIES)},
                },
                "required": ["content", "status"],
            },
        }
    },
    "required": ["entries"],
}
DESCRIPTION = (
    "Keep a to-do list for a task with several steps; the user sees it beside the chat. Send the whole "
    "list each time: mark one step in_progress while you work on it and completed when done."
)


def parse_plan(arguments: Any) -> list[PlanEntry]:
    """The entries of a plan call; ValueError says what is wrong."""
    entries = arguments.get("entries") if isinstance(arguments, dict) else None
    if not isinstance(entries, list):
        raise ValueError("`entries` must be a list of steps")
    if len(entries) > MAX_ENTRIES:
        raise ValueError(f"a plan has at most {MAX_ENTRIES} steps")
    plan = []
    for number, entry in enumerate(entries, 1):
        content = entry.get("content") if isinstance(entry, dict) else None
        if not isinstance(content, str) or not content.strip():
            raise ValueError(f"step {number} needs a non-empty `content`")
        status = entry.get("status", "pending")
        priority = entry.get("priority", "medium")
        if status not in STATUSES or priority not in PRIORITIES:
            raise ValueError(f"step {number}: status is one of {STATUSES}, priority one of {PRIORITIES}")
        plan.append(
            PlanEntry(" ".join(redact(content).split())[:MAX_TEXT], status, priority)
        )  # no part of a key at the cut
    return plan


async def _update(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    try:
        plan = parse_plan(arguments)
    except ValueError as exc:
        return ToolResult(f"Plan not updated: {exc}.", is_error=True)
    await context.session.update_plan(plan)
    done = sum(entry.status == "completed" for entry in plan)
    return ToolResult(f"Plan updated: {len(plan)} steps, {done} completed.")


def plan_tool_callback() -> Any:
    """A begin_session callback that offers the plan tool."""

    async def offer_plan_tool(session: Any, **_: Any) -> None:
        session.add_tool(make_plan_tool())

    return offer_plan_tool


def make_plan_tool() -> FunctionTool:
    return FunctionTool(NAME, DESCRIPTION, PARAMETERS, _update, read_only=True, kind="think", title=lambda _: "Plan")
