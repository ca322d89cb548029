"""Permission policy: allow, deny, or ask the editor, under the session's mode; it fails closed.

Policy per tool: the first matching key of [permissions.tools] (names or fnmatch patterns), else
`allow` for tools marked read-only, else [permissions].default; a run's `--deny` patterns come before
all of it, its `--allow` patterns after a config rule that denies. The mode (modes.py) then decides:
"deny" holds in every mode; plan refuses whatever changes something; a write to a protected path
(protected.py) asks in every other mode but full access, whatever config or a remembered answer
says; accept_edits allows other edits inside the roots; full_access allows the rest. Answers
the user gave "always" (remembered.py) allow that tool, or that exact command, in these roots.

Asking fails closed: the call runs only when the answer selects an allow option offered in that
very request. An unknown or empty option id, a malformed answer, a client error, no answer within
[permissions] timeout, or a cancel refuses it, and the model is told why. An answer that arrives
after the mode changed is taken as the new mode decides: plan refuses even an Allow.
"""

from __future__ import annotations

import fnmatch
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from acp.schema import (
    AllowedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)
from pydantic import ValidationError

from ..config import PermissionConfig, Policy, SandboxConfig, crow_home
from ..config.protected import ProtectedPaths
from ..events import ToolView
from ..telemetry import gen_ai, spans
from .modes import Mode, capped, current_mode, edit_inside_roots, plan_refusal
from .remembered import always_label, command_of, is_remembered, remember
from .sandboxing import OUTSIDE, SandboxPolicy, is_sandboxed
from .write_targets import protected_write

if TYPE_CHECKING:
    from ..api import Tool
    from ..core.session import Session
    from ..core.turn import PendingCall
    from ..events import ToolResult

log = logging.getLogger(__name__)

ALLOW = PermissionOption(option_id="allow_once", name="Allow", kind="allow_once")
REJECT = PermissionOption(option_id="reject_once", name="Reject", kind="reject_once")
OUTSIDE_ONCE = PermissionOption(option_id="allow_unsandboxed", name="Run outside the sandbox", kind="allow_once")
NOT_RUN = "The call was not run."


def policy_for(config: PermissionConfig, tool: Tool) -> Policy:
    """A run's --deny first, then a config rule that denies; a run's --allow next, then the rest."""
    if _matches(tool.name, config.run_deny):
        return "deny"
    policy = next((policy for pattern, policy in config.tools.items() if fnmatch.fnmatchcase(tool.name, pattern)), None)
    if policy != "deny" and _matches(tool.name, config.run_allow):
        return "allow"
    return policy or ("allow" if tool.read_only else config.default)


def _matches(name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def options(command: str | None, once_only: bool, sandboxed: bool = False) -> list[PermissionOption]:
    """Allow, Always allow (naming what it remembers; not for a protected path or a command leaving the
    sandbox), for a sandboxed command separately Run outside the sandbox, Reject."""
    if once_only:
        return [ALLOW, REJECT]
    always = PermissionOption(option_id="allow_always", name=always_label(command), kind="allow_always")
    return [ALLOW, always, OUTSIDE_ONCE, REJECT] if sandboxed else [ALLOW, always, REJECT]


class Permissions:
    """The loop's permission gate: returns None to run the call, or why it may not run."""

    def __init__(
        self, config: PermissionConfig, sandbox: SandboxConfig | None = None, home: Path | None = None
    ) -> None:
        self.config = config
        self.protected = ProtectedPaths.of(config.protected)
        self.sandbox = SandboxPolicy(sandbox or SandboxConfig(), home or crow_home(), self.protected.patterns)

    async def __call__(
        self, session: Session, call: PendingCall, tool: Tool, preview: ToolResult | None = None
    ) -> str | None:
        policy = policy_for(self.config, tool)
        if policy == "deny":
            return f"The tool {tool.name!r} is denied by the permission policy."
        mode, view = self.mode(session), call.view or ToolView(tool.name)
        escalates, unusable = False, None
        if is_sandboxed(tool):
            unusable = await self.sandbox.unusable(session)
            call.sandbox = self.sandbox.wanted(call.args or {}) if unusable is None else OUTSIDE
            escalates = self.sandbox.escalates(call.sandbox)
            if call.sandbox.level == "off" and not self.may_leave:
                return _capped_refusal(self.config.max_mode, unusable)
            if mode == "plan" and not escalates:
                call.sandbox = self.sandbox.read_only()
                return None  # plan mode explores with commands that can change nothing
        if mode == "plan" and unusable is None and (refusal := plan_refusal(tool, view)):
            return refusal  # without a sandbox, plan mode asks for a command as ask mode does
        protected = await protected_write(self.protected, session, call, view)
        if mode == "full_access":
            call.sandbox = OUTSIDE
            return None
        command = command_of(view, call.args or {})
        if not protected and not escalates and (policy == "allow" or is_remembered(session, tool, command)):
            return None
        roots = [session.cwd, *session.additional_directories]
        if not protected and mode in ("accept_edits", "auto") and edit_inside_roots(view, roots):
            return None
        if mode == "auto" and is_sandboxed(tool) and not escalates:
            return None  # inside the sandbox: nothing it can do needs a question
        if session.client is None:
            return f"The tool {tool.name!r} needs permission, and no editor is attached to ask."
        sandbox = None
        if is_sandboxed(tool):
            sandbox = f"outside the sandbox: {unusable}" if unusable else call.sandbox.describe()
        may_leave = not escalates and self.may_leave
        return await self._ask(session, call, tool, preview, Asked(mode, command, protected, sandbox, may_leave))

    @property
    def may_leave(self) -> bool:
        """Whether any command may run outside the sandbox: only under a cap of full access."""
        return self.config.max_mode == "full_access"

    def mode(self, session: Session) -> Mode:
        """The session's mode as it holds: the stored one, capped at [permissions] max_mode."""
        return capped(current_mode(session, self.config.default_mode), self.config.max_mode)

    async def _ask(
        self, session: Session, call: PendingCall, tool: Tool, preview: ToolResult | None, asked: Asked
    ) -> str | None:
        view = call.view or ToolView(tool.name)
        update = ToolCallUpdate(
            tool_call_id=call.id,
            title=_title(view.title, asked),
            kind=view.kind,
            status="pending",
            raw_input=call.shown_args,  # after any before_tool rewrite: what would really run
            content=preview.content if preview else None,  # e.g. the diff an edit would make
        )
        once_only = bool(asked.protected) or (asked.sandbox is not None and not asked.may_leave)
        offered = options(asked.command, once_only, asked.may_leave)
        try:
            asked_span = gen_ai.permission(tool.name, call.id) if spans.on else spans.OFF
            with asked_span, anyio.fail_after(self.config.timeout):
                response = await session.client.request_permission(
                    session_id=session.id, tool_call=update, options=offered
                )
        except TimeoutError:
            return f"No answer to the permission request within {self.config.timeout:g} s. {NOT_RUN}"
        except Exception as exc:  # the client is others' code: whatever it does, the call does not run
            log.warning("permission request for %s failed: %r", call.id, exc)
            return f"The permission request failed ({type(exc).__name__}). {NOT_RUN}"
        chosen = _chosen(response, offered)
        if isinstance(chosen, str):
            return chosen
        now = self.mode(session)
        if now != asked.mode:  # the question was asked under another mode: the new one decides
            return _after_mode_change(now, tool, view)
        if chosen.kind == "allow_always":
            remember(session, tool, asked.command)
        if chosen is OUTSIDE_ONCE:
            call.sandbox = OUTSIDE  # only this explicit answer runs a sandboxed command outside it
        return None


@dataclass(frozen=True)
class Asked:
    """What a question was asked under: the mode, the command "always" would remember, the protected path."""

    mode: Mode
    command: str | None
    protected: str | None
    sandbox: str | None = None
    """How a command would run (sandboxed, or outside the sandbox and why), for the question."""
    may_leave: bool = False
    """A sandboxed command: the question also offers to run it outside the sandbox."""


def _capped_refusal(cap: Mode, unusable: str | None) -> str:
    why = f"the sandbox cannot run here ({unusable}), and " if unusable else ""
    return (
        f"Not run: {why}this server caps the permission mode at {cap!r}, so no command runs outside the sandbox. "
        'Run it sandboxed (without `"sandbox": "off"`), or ask the operator for `--max-mode full_access`.'
    )


def _title(title: str, asked: Asked) -> str:
    notes = [f"protected path: {asked.protected}" if asked.protected else None, asked.sandbox]
    shown = "; ".join(note for note in notes if note)
    return f"{title} ({shown})" if shown else title


def _after_mode_change(mode: Mode, tool: Tool, view: ToolView) -> str | None:
    """An Allow given to a question the mode has since overtaken: plan mode still refuses."""
    if mode == "plan" and (refusal := plan_refusal(tool, view)):
        return f"The mode changed to plan while the question was open. {refusal}"
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
