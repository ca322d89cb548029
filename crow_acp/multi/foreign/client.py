"""What crow answers a foreign member: the ACP client side, fail-closed.

- session/request_permission: asked of the editor under the crow session the member serves (a
  MultiAgent's MemberConnection attributes it). Anything but one of the offered options, chosen by
  the editor in time, is a rejection: no editor, an error, a timeout, a cancel, an unknown option.
  Crow never answers one itself, so a member cannot skip the question.
- fs/read_text_file, fs/write_text_file: offered only when the editor offers them, confined to the
  session's roots, and a write is a permission question of its own before it is forwarded.
- The crow session's permission mode holds: whatever the mode, crow never answers "allow" itself (so a
  foreign member, a delegate's helper too, is never more permissive than its parent); in plan mode a
  question whose kind is not read-only (PLAN_KINDS: an edit, a command, "other", none) and every fs
  write are refused without asking, as crow's own changing tools are.
- terminal/*: offered only when the editor offers terminals, and served by terminals.py: the member's
  command runs in the editor's terminal in crow's sandbox, under crow's own permission decision for a
  run_command call with that line; a member reaches only its own terminals, which end with its turn.
  When the editor offers no terminal, neither does crow: the member runs its commands itself.
- Anything for a session id that is not one of the member's own is refused.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from acp import RequestError
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    EnvVariable,
    FileSystemCapabilities,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from ...core.session import Session
from ...editor.paths import Workspace
from ...errors import ToolError
from ...policy.modes import Mode
from .options import shown_options
from .side import MemberSide
from .terminals import MemberTerminals

log = logging.getLogger(__name__)
REJECTED = RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
PLAN_KINDS = frozenset({"read", "search", "think", "fetch"})
"""The tool kinds a member in plan mode may still ask about; any other kind is refused unasked."""


class MemberClient:
    """The Client crow is to one link of a member."""

    def __init__(self, side: MemberSide, timeout: float, mode: Callable[[str], Mode], terminals: MemberTerminals):
        self._name = side.name
        self.terminals = terminals
        self._mode = mode
        """The permission mode of a crow session (the parent's, for a delegate's helper)."""
        self._editor = side.editor
        """The member agent's EditorLink: its `conn` (a MemberConnection in a graph) and the editor's capabilities."""
        self._sessions = side.sessions
        self._session: Callable[[str], Session] = side.session
        self._timeout = timeout
        self.touch: Callable[[str], None] = lambda sid: None
        """Called with the crow session id as a question is asked and answered: waiting is not silence."""
        terminals.touch = lambda sid: self.touch(sid)

    def capabilities(self) -> ClientCapabilities:
        editor: ClientCapabilities | None = self._editor.capabilities
        fs = editor.fs if editor is not None and editor.fs is not None else FileSystemCapabilities()
        return ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=bool(fs.read_text_file), write_text_file=bool(fs.write_text_file)),
            terminal=self.terminals.offered(),
        )

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        log.warning("member %s: an update bypassed the gate; dropped", self._name)  # UpdateGate takes them all

    async def request_permission(
        self, options: list[PermissionOption], session_id: str, tool_call: ToolCallUpdate, **_: Any
    ) -> RequestPermissionResponse:
        sid = self._sessions.get(session_id)
        if sid is None or self._editor.conn is None:
            log.warning(
                "member %s: permission asked for a session not its own, or with no editor: rejected", self._name
            )
            return REJECTED
        if self._mode(sid) == "plan" and tool_call.kind not in PLAN_KINDS:
            log.warning("member %s: %r (kind %s) refused in plan mode", self._name, tool_call.title, tool_call.kind)
            return REJECTED
        return await self._ask(sid, tool_call, options)

    async def _ask(self, sid: str, tool_call: Any, options: list[PermissionOption]) -> RequestPermissionResponse:
        self.touch(sid)
        options = shown_options(options)  # a "Deny" of kind allow_always is shown as what it does
        try:
            answer = await asyncio.wait_for(
                self._editor.conn.request_permission(session_id=sid, tool_call=tool_call, options=options),
                self._timeout,
            )
        except Exception:  # the isolation boundary of a question: no answer at all is a rejection
            log.warning("member %s: the permission question failed; rejected", self._name, exc_info=True)
            return REJECTED
        finally:
            self.touch(sid)
        outcome = answer.outcome
        if not isinstance(outcome, AllowedOutcome) or outcome.option_id not in {o.option_id for o in options}:
            return REJECTED
        return RequestPermissionResponse(outcome=answer.outcome)

    async def read_text_file(self, path: str, session_id: str, **kwargs: Any) -> Any:
        sid, confined = self._confined(session_id, path, "read_text_file")
        return await self._editor.conn.read_text_file(path=confined, session_id=sid, **kwargs)

    async def write_text_file(self, content: str, path: str, session_id: str, **kwargs: Any) -> Any:
        sid, confined = self._confined(session_id, path, "write_text_file")
        if self._mode(sid) == "plan":
            raise RequestError(-32000, f"plan mode: no writes ({confined} was not written)")
        question = ToolCallUpdate(tool_call_id=f"fs-write-{id(content)}", title=f"Write {confined}", kind="edit")
        options = [
            PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
            PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
        ]
        answer = await self._ask(sid, question, options)
        if not isinstance(answer.outcome, AllowedOutcome) or answer.outcome.option_id != "allow":
            raise RequestError(-32000, f"the user did not allow writing {confined}")
        return await self._editor.conn.write_text_file(content=content, path=confined, session_id=sid, **kwargs)

    def _confined(self, session_id: str, path: str, method: str) -> tuple[str, str]:
        sid = self._sessions.get(session_id)
        fs = self.capabilities().fs
        offered = fs is not None and (fs.read_text_file if method == "read_text_file" else fs.write_text_file)
        if sid is None or not offered or self._editor.conn is None:
            raise RequestError.method_not_found(f"fs/{method}")
        session = self._session(sid)
        try:
            return sid, Workspace.of(session.cwd, session.additional_directories).resolve(path)
        except ToolError as exc:
            raise RequestError.invalid_params({"path": str(exc)}) from exc

    async def create_terminal(
        self,
        command: str,
        session_id: str,
        args: list[str] | None = None,
        cwd: str | None = None,
        env: list[EnvVariable] | None = None,
        output_byte_limit: int | None = None,
        **_: Any,
    ) -> CreateTerminalResponse:
        return await self.terminals.create(command, session_id, args, cwd, env, output_byte_limit)

    async def terminal_output(self, session_id: str, terminal_id: str, **_: Any) -> Any:
        return await self.terminals.output(session_id, terminal_id)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **_: Any) -> Any:
        return await self.terminals.wait_for_exit(session_id, terminal_id)

    async def kill_terminal(self, session_id: str, terminal_id: str, **_: Any) -> Any:
        return await self.terminals.kill(session_id, terminal_id)

    async def release_terminal(self, session_id: str, terminal_id: str, **_: Any) -> Any:
        return await self.terminals.release(session_id, terminal_id)
