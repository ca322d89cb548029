"""The plan tool: the model keeps a to-do list, and the editor shows it as ACP `plan` updates.

Read-only and never asks: it only changes what the editor shows. Each call sends the whole list
(an ACP plan update replaces the editor's plan), and session/load replays the calls, so the plan
survives a restart. An editor with plan operations (ACP 1.34) gets `plan_update` under one stable
plan id instead, and may be given a Markdown plan (`markdown`, with the `path` of its file if it is
one); `entries: []` abandons the plan (`plan_removed`; an empty `plan` for other editors).
"""

from __future__ import annotations

import os
from typing import Any

from ..events import PlanEntry, PlanRemoved, PlanUpdated, ToolResult
from ..plugin.session import ToolContext
from ..tools import FunctionTool
from ..util.secrets import redact

NAME = "write_plan"  # not update_plan: the planner pattern has its own tool by that name
MAX_ENTRIES = 50
MAX_TEXT = 500
MAX_MARKDOWN = 20_000
MAX_PATH = 4096
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
        },
        "markdown": {
            "type": "string",
            "description": "Instead of entries: the whole plan as a Markdown document (it replaces the previous plan).",
        },
        "path": {"type": "string", "description": "With markdown: the absolute path of the file the plan is in."},
    },
}
DESCRIPTION = (
    "Keep a to-do list for a task with several steps; the user sees it beside the chat. Send the whole "
    "list each time: mark one step in_progress while you work on it and completed when done. A longer plan "
    "may be given as `markdown` instead of entries; send `entries: []` to drop a plan you abandoned."
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


def plan_event(session_id: str, arguments: Any) -> PlanUpdated | PlanRemoved:
    """What a plan call shows: a Markdown plan, the entries, or (no entries) the plan removed; ValueError
    says what is wrong."""
    markdown = arguments.get("markdown") if isinstance(arguments, dict) else None
    if markdown is None:
        entries = parse_plan(arguments)
        return PlanUpdated(session_id, tuple(entries)) if entries else PlanRemoved(session_id)
    if "entries" in arguments:
        raise ValueError("give `entries` or `markdown`, not both")
    if not isinstance(markdown, str) or not markdown.strip() or len(markdown) > MAX_MARKDOWN:
        raise ValueError(f"`markdown` must be a non-empty text of at most {MAX_MARKDOWN} characters")
    path = arguments.get("path")
    if path is not None and (not isinstance(path, str) or not os.path.isabs(path) or len(path) > MAX_PATH):
        raise ValueError("`path` must be an absolute file path")
    return PlanUpdated(session_id, (), markdown=redact(markdown), path=path and redact(path))


async def _update(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
    try:
        event = plan_event("", arguments)
    except ValueError as exc:
        return ToolResult(f"Plan not updated: {exc}.", is_error=True)
    if isinstance(event, PlanRemoved):
        await context.session.remove_plan(event.plan_id)
        return ToolResult("Plan removed.")
    await context.session.update_plan(list(event.entries), markdown=event.markdown, path=event.path)
    if event.markdown is not None:
        return ToolResult("Plan updated (Markdown).")
    done = sum(entry.status == "completed" for entry in event.entries)
    return ToolResult(f"Plan updated: {len(event.entries)} steps, {done} completed.")


def plan_tool_callback() -> Any:
    """A begin_session callback that offers the plan tool."""

    async def offer_plan_tool(session: Any, **_: Any) -> None:
        session.add_tool(make_plan_tool())

    return offer_plan_tool


def make_plan_tool() -> FunctionTool:
    return FunctionTool(NAME, DESCRIPTION, PARAMETERS, _update, read_only=True, kind="think", title=lambda _: "Plan")
