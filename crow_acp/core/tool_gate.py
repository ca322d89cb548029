"""The path of one tool call before and after it runs: the before_tool steps, then after_tool.

    before_tool callbacks, in list order ─┬─ Allow / None ─▶ next step
                                          ├─ Rewrite(args) ─▶ next step, with these arguments
                                          ├─ Refuse(reason) ─▶ error result, no tool runs
                                          └─ Answer(result) ─▶ this result, no tool runs
    permission_policy (last unless placed) ── the tool's preview, the config rules, the mode, the question
    the tool runs with the final arguments
    after_tool callbacks, in list order ──── a ToolResult (or text) replaces the result

So a veto, a rewrite or a cached answer happens before anyone is asked, the permission prompt
shows the rewritten arguments, and a guard that allows does not skip the question.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..events import ToolResult, ToolView
from ..plugin.decisions import Allow, Answer, Refuse, Rewrite, ToolCallInfo
from ..plugin.hooks import Callback
from .hooks import call_returning, callback_name, report_failure

if TYPE_CHECKING:
    from ..plugin.session import Tool, ToolContext
    from .session_view import SessionView
    from .turn import PendingCall, Turn


class PermissionPolicy:
    """Marks where the permission policy runs among the before_tool callbacks. Crow appends it when
    the list does not hold it; put `permission_policy` earlier to ask before some of your guards."""

    async def __call__(self, session: SessionView, **_: Any) -> None:
        """Never called by the gate, which runs the policy itself where this marker stands."""

    def __repr__(self) -> str:
        return "permission_policy"


permission_policy = PermissionPolicy()


@dataclass
class Gate:
    """Where the before_tool steps left a call: run it with `call.arguments`, or this result instead."""

    call: ToolCallInfo
    result: ToolResult | None = None


def describe(call: PendingCall, tool: Tool, arguments: dict[str, Any]) -> ToolCallInfo:
    view = call.view or ToolView(tool.name)
    return ToolCallInfo(
        id=call.id,
        name=tool.name,
        arguments=arguments,
        title=view.title,
        kind=view.kind,
        read_only=bool(tool.read_only),
        description=tool.description or "",
        locations=tuple(view.locations),
    )


def steps(before_tool: list[Callback]) -> list[Callback]:
    listed = list(before_tool)
    return listed if any(isinstance(step, PermissionPolicy) for step in listed) else [*listed, permission_policy]


async def before_tool(turn: Turn, call: PendingCall, tool: Tool, context: ToolContext) -> Gate:
    """Run the before_tool steps for a call whose arguments are a JSON object."""
    assert call.args is not None
    info = describe(call, tool, call.args)
    for step in steps(turn.callbacks.before_tool):
        if isinstance(step, PermissionPolicy):
            refusal = await _permission(turn, call, tool, context)
            if refusal is not None:
                return Gate(info, refusal)
            continue
        outcome = await call_returning(step, context.session, hook="before_tool", call=info)
        if outcome.error is not None:  # a broken guard must not let the call through
            await report_failure(context.session, step, outcome.error)
            reason = f"A tool guard failed ({type(outcome.error).__name__}). The call was not run."
            return Gate(info, ToolResult(reason, is_error=True))
        match outcome.value:
            case None | Allow():
                continue
            case Refuse(reason):
                return Gate(info, ToolResult(str(reason), is_error=True))
            case Answer(result):
                return Gate(info, result if isinstance(result, ToolResult) else ToolResult(str(result)))
            case Rewrite(arguments) if _is_object(arguments):
                call.args = dict(arguments)
                call.view = tool.view(call.args)
                info = describe(call, tool, call.args)
            case other:
                reason = f"The tool guard {callback_name(step)} returned {type(other).__name__}, not a decision."
                await context.session.report(reason, status="failed")
                return Gate(info, ToolResult(f"{reason} The call was not run.", is_error=True))
    return Gate(info)


async def _permission(turn: Turn, call: PendingCall, tool: Tool, context: ToolContext) -> ToolResult | None:
    """The permission policy step: an unworkable call ends here; otherwise the policy may refuse it."""
    assert call.args is not None
    preview = await tool.preview(call.args, context)
    if preview and preview.is_error:  # it cannot work (say, a path outside the workspace): no need to ask
        return preview
    if refusal := await turn.permit(turn.session, call, tool, preview):
        return ToolResult(refusal, is_error=True)
    return None


async def after_tool(turn: Turn, session: SessionView, info: ToolCallInfo, result: ToolResult, ran: bool) -> ToolResult:
    """Run the after_tool callbacks; each may replace the result the next one (and the model) sees."""
    for callback in list(turn.callbacks.after_tool):
        outcome = await call_returning(callback, session, hook="after_tool", call=info, result=result, ran=ran)
        if outcome.error is not None:
            await report_failure(session, callback, outcome.error)
        elif isinstance(outcome.value, ToolResult):
            result = outcome.value
        elif isinstance(outcome.value, str):
            result = ToolResult(outcome.value)
    return result


def _is_object(arguments: Any) -> bool:
    """Rewritten arguments must be a JSON object, as the model's own are."""
    if not isinstance(arguments, dict):
        return False
    try:
        json.dumps(arguments)
    except (TypeError, ValueError):
        return False
    return True


def placeholder(call: PendingCall) -> ToolCallInfo:
    """What after_tool sees for a call that never reached a tool (unknown tool, bad arguments)."""
    view = call.view or ToolView(call.name)
    return ToolCallInfo(call.id, call.name, call.args or {}, view.title, view.kind, False)
