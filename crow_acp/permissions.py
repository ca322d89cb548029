"""Permission policy: allow, deny, or ask the editor, under the session's mode; it fails closed.

Policy per tool: the first matching key of [permissions.tools] (names or fnmatch patterns), else
`allow` for tools marked read-only or allowed always in this session, else [permissions].default.
The mode (modes.py) then decides: "deny" holds in every mode; plan refuses whatever changes
something; accept_edits allows edits inside the roots; full_access allows the rest.

Asking fails closed: the call runs only when the answer selects an allow option offered in that
very request. An unknown or empty option id, a malformed answer, a client error, no answer within
[permissions] timeout, or a cancel refuses it, and the model is told why.
"""

from __future__ import annotations

import fnmatch
import logging
from typing import TYPE_CHECKING, Any

import anyio
from acp.schema import (
    AllowedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)
from pydantic import ValidationError

from .config import PermissionConfig, Policy
from .events import ToolView
from .modes import current_mode, edit_inside_roots, plan_refusal

if TYPE_CHECKING:
    from .api import Tool
    from .events import ToolResult
    from .loop import PendingCall
    from .session import Session

log = logging.getLogger(__name__)

OPTIONS = (
    PermissionOption(option_id="allow_once", name="Allow", kind="allow_once"),
    PermissionOption(option_id="allow_always", name="Always allow", kind="allow_always"),
    PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
)
NOT_RUN = "The call was not run."


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
        if policy == "deny":
            return f"The tool {tool.name!r} is denied by the permission policy."
        mode, view = current_mode(session, self.config.default_mode), call.view or ToolView(tool.name)
        if mode == "plan" and (refusal := plan_refusal(tool, view)):
            return refusal
        if policy == "allow" or mode == "full_access":
            return None
        if mode == "accept_edits" and edit_inside_roots(view, [session.cwd, *session.additional_directories]):
            return None
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
            raw_input=call.shown_args,  # after any before_tool rewrite: what would really run
            content=preview.content if preview else None,  # e.g. the diff an edit would make
        )
        offered = list(OPTIONS)
        try:
            with anyio.fail_after(self.config.timeout):
                response = await session.client.request_permission(session_id=session.id, tool_call=update, options=offered)
        except TimeoutError:
            return f"No answer to the permission request within {self.config.timeout:g} s. {NOT_RUN}"
        except Exception as exc:  # the client is others' code: whatever it does, the call does not run
            log.warning("permission request for %s failed: %r", call.id, exc)
            return f"The permission request failed ({type(exc).__name__}). {NOT_RUN}"
        chosen = _chosen(response, offered)
        if isinstance(chosen, str):
            return chosen
        if chosen.kind == "allow_always":
            session.allowed_tools.append(tool.name)
            session.save()
        return None


def _chosen(response: Any, offered: list[PermissionOption]) -> PermissionOption | str:
    """The allow option the answer selected, or why the answer does not allow the call."""
    try:
        answer = RequestPermissionResponse.model_validate(response, from_attributes=True)
    except ValidationError:
        return f"The editor's answer to the permission request was malformed. {NOT_RUN}"
    outcome = answer.outcome
    if not isinstance(outcome, AllowedOutcome):
        return f"The permission request was cancelled. {NOT_RUN}"
    option = next((o for o in offered if o.option_id == outcome.option_id), None)
    if option is None:
        return f"The editor answered with an option crow did not offer ({outcome.option_id[:40]!r}). {NOT_RUN}"
    if option.kind not in ("allow_once", "allow_always"):
        return "The user rejected this tool call."
    return option
