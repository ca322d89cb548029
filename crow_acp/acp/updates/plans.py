"""Plans on load: what a stored write_plan call showed, and the last state of each plan for an editor with
plan operations (ACP 1.34), which gets each plan once after the history instead of every step of it."""

from __future__ import annotations

from typing import Any

from ...editor.plan_tool import NAME as PLAN_TOOL
from ...editor.plan_tool import plan_event
from ...events import PlanRemoved, PlanUpdated
from ...history import ToolDisplay
from ..rpc.shapes.updates import plan_operation


class LastPlans:
    """The last state of each plan a replay met: an editor with plan operations gets it once, after the
    history (a plan removed since is not shown), instead of the panel as it was at each plan call."""

    def __init__(self) -> None:
        self._plans: dict[str, PlanUpdated] = {}

    def record(self, plan: PlanUpdated | PlanRemoved) -> None:
        self._plans.pop(plan.plan_id, None)  # the last one changed goes last
        if isinstance(plan, PlanUpdated):
            self._plans[plan.plan_id] = plan

    def updates(self) -> list[Any]:
        return [plan_operation(plan) for plan in self._plans.values()]


def plan_shown(tool: ToolDisplay) -> PlanUpdated | PlanRemoved | None:
    """What a stored plan call showed the editor, if it is one."""
    if tool.name != PLAN_TOOL or tool.status != "completed":
        return None
    try:
        return plan_event("", tool.raw_input)
    except ValueError:  # another tool by that name (a plugin's): nothing to show
        return None
