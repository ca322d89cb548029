"""Permission policy: allow, deny, or ask the editor; "allow always" is remembered per session.

Policy per tool: the first matching key of [permissions.tools] (names or fnmatch patterns), else
`allow` for tools marked read-only, else [permissions].default (ask unless configured).
"""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING, Any

from acp.schema import PermissionOption, ToolCallUpdate

from .config import PermissionConfig, Policy

if TYPE_CHECKING:
    from .events import ToolResult
    from .loop import PendingCall
    from .session import Session
    from .tools import Tool

OPTIONS = [
    PermissionOption(option_id="allow_once", name="Allow", kind="allow_once"),
    PermissionOption(option_id="allow_always", name="Always allow", kind="allow_always"),
    PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
]


def policy_for(config: PermissionConfig, tool: Tool, allowed: list[str]) -> Policy:
    for pattern, policy in config.tools.items():
        if fnmatch.fnmatchcase(tool.name, pattern):
            return policy
    if tool.name in allowed or tool.read_only:
        return "allow"
    return config.default


class Permissions:
    """The loop's permission gate: returns None to run the call, or why it may not run."""

    def __init__(self, config: PermissionConfig) -> None:
        self.config = config

    async def __call__(self, session: Session, call: PendingCall, tool: Tool, preview: ToolResult | None = None) -> str | None:
        policy = policy_for(self.config, tool, session.allowed_tools)
        if policy == "allow":
            return None
        if policy == "deny":
            return f"The tool {tool.name!r} is denied by the permission policy."
        if session.client is None:
            return f"The tool {tool.name!r} needs permission, and no editor is attached to ask."
        return await self._ask(session, call, tool, preview)

    async def _ask(self, session: Session, call: PendingCall, tool: Tool, preview: ToolResult | None) -> str | None:
        view = call.view
        update = ToolCallUpdate(
            tool_call_id=call.id,
            title=view.title if view else tool.name,
            kind=view.kind if view else "other",
            status="pending",
            raw_input=call.shown_args,
            content=preview.content if preview else None,  # e.g. the diff an edit would make
        )
        response = await session.client.request_permission(session_id=session.id, tool_call=update, options=OPTIONS)
        outcome: Any = response.outcome
        if outcome.outcome != "selected" or outcome.option_id.startswith("reject"):
            return "The user rejected this tool call."
        if outcome.option_id == "allow_always":
            session.allowed_tools.append(tool.name)
            session.save()
        return None
