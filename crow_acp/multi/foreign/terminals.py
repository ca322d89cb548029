"""terminal/* for a foreign member: its commands run in the editor's terminals, under crow's own sandbox and rules.

Why: a member that runs its commands itself runs them outside crow's sandbox and permission policy. When the
editor offers terminals, crow offers them to the member and serves them so that the member's commands go where
crow's own `run_command` goes (editor/terminal.py `in_terminal`), under the same rules:

- The line. The member's `command` is a shell line, as run_command's (and as editors run it); with `args`, the
  command and each argument are shell-quoted, so they reach the program exactly as given. The line is one
  argument after bwrap's `--` in crow's sandboxed terminal line (editor/terminal_sandbox.py): the prelude never
  reads it, only the shell inside the sandbox does. crow's model keys are unset, as for its own commands.
- Its `env` is exported by the shell inside the sandbox, after the limits, never put in the editor's environment
  of the prelude and bwrap: there a PATH would choose the `bwrap` the prelude runs, and LD_PRELOAD or BASH_ENV
  would run code before the sandbox exists. Names must be shell identifiers.
- Its `cwd` must be a directory inside the session's roots (its real path); `outputByteLimit` is at most crow's.
- Permission is crow's own gate (policy/permissions.py), as if the model had called run_command with that line:
  deny rules, modes, remembered answers, whether the sandbox can run. Plan mode runs it only in the read-only
  sandbox: where that cannot run, the command is refused (crow's own would ask).
- A terminal whose output shows the sandbox did not start on the editor's machine (no bwrap there) makes the
  session's later commands ask, as crow's own do; plan mode then refuses them.
- A member reaches only the terminals it created through this link, for the session that created them, while
  that session's turn runs; at most MAX_LIVE at once. Its tool calls may show only those (member.py). A
  terminal outlives neither the member's turn (whatever ended it: the reply, a cancel, a crash) nor its link:
  crow kills and releases whatever is left.
"""

from __future__ import annotations

import logging
import re
import shlex
import stat
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from acp import RequestError
from acp.schema import CreateTerminalResponse, EnvVariable

from ...api import Sandbox
from ...core.session import Session
from ...core.turn import PendingCall
from ...editor.paths import Workspace
from ...editor.terminal import CLIENT_OUTPUT_BYTES, QUIET_ENV, SHELL, terminal_tools, unset_keys
from ...editor.terminal_sandbox import did_not_start, mark_unavailable, terminal_argv
from ...errors import ToolError
from ...events import ToolView
from ...policy.permissions import Permissions
from .side import MemberSide

log = logging.getLogger(__name__)
MAX_LIVE = 16
MAX_ENV = 256
END_WAIT = 5.0
"""Seconds the editor has to kill, then to release, a terminal crow ends."""
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def refused(why: str) -> RequestError:
    return RequestError(-32000, why)


def command_line(command: str, args: list[str], env: list[EnvVariable]) -> str:
    """The shell line the sandboxed shell runs: the exports, then the command. Invalid params: empty, a NUL,
    a variable name that is not a shell identifier, too many variables."""
    parts = [command, *args]
    if not command.strip() or any("\0" in part for part in parts):
        raise RequestError.invalid_params({"command": "an empty command, or a NUL character in it"})
    if len(env) > MAX_ENV or any(not ENV_NAME.match(v.name) or "\0" in v.value for v in env):
        raise RequestError.invalid_params({"env": f"at most {MAX_ENV} variables, named as shell identifiers"})
    line = shlex.join(parts) if args else command.strip()
    exports = "".join(f"export {v.name}={shlex.quote(v.value)}\n" for v in env)
    return exports + line


class MemberTerminals:
    """The terminals one link's member created in the editor, and the rules it creates them under."""

    def __init__(self, side: MemberSide, permissions: Permissions, turn_open: Callable[[str], bool]) -> None:
        self._name, self._editor, self._sessions = side.name, side.editor, side.sessions
        """The editor: the member agent's EditorLink (its conn: a MemberConnection in a graph, a ChildConnection
        for a helper)."""
        self._session: Callable[[str], Session] = side.session
        self._permissions = permissions
        self._turn_open = turn_open
        self._live: dict[str, tuple[str, str]] = {}
        """The editor's terminal id → the member's session id that created it, and its crow session."""
        self._created: set[tuple[str, str]] = set()
        """(crow session, terminal id) of every terminal made here, live or ended: what its tool calls may show."""
        self._starting = 0
        self.closed = False
        self.touch: Callable[[str], None] = lambda sid: None

    def offered(self) -> bool:
        caps = self._editor.capabilities
        return caps is not None and bool(caps.terminal)

    async def create(
        self,
        command: str,
        session_id: str,
        args: list[str] | None,
        cwd: str | None,
        env: list[EnvVariable] | None,
        limit: int | None,
    ) -> CreateTerminalResponse:
        sid = self._crow_session(session_id)
        if not self._turn_open(sid):
            raise refused(f"{self._name}: no turn of this session is running, so no terminal is created")
        if len(self._live) + self._starting >= MAX_LIVE:
            raise refused(f"{self._name} has {MAX_LIVE} terminals already: release one first")
        session = self._session(sid)
        line = command_line(command, list(args or []), list(env or []))
        self._starting += 1
        try:
            where = await self._cwd(session, cwd)
            sandbox = await self._busy(sid, self._permit(session, line))  # a question may be asked
            if self.closed or not self._turn_open(sid):  # the turn ended while the question was open
                raise refused(f"{self._name}'s turn ended: the command was not run")
            roots = [session.cwd, *session.additional_directories]  # as the editor named them
            argv = [SHELL, "-c", line] if sandbox.level == "off" else terminal_argv(sandbox, SHELL, line, where, roots)
            created = await self._editor.conn.create_terminal(
                session_id=sid,
                command="env",  # ACP cannot unset a variable: env -u keeps crow's model keys from the command
                args=[*unset_keys(), *argv],
                cwd=where,
                env=[EnvVariable(name=k, value=v) for k, v in QUIET_ENV.items()],
                output_byte_limit=max(0, min(CLIENT_OUTPUT_BYTES if limit is None else limit, CLIENT_OUTPUT_BYTES)),
            )
        finally:
            self._starting -= 1
        terminal_id = created.terminal_id
        if self.closed or not self._turn_open(sid):  # the turn or link ended while the editor started it
            await self._end(sid, terminal_id)
            raise refused(f"{self._name}'s turn ended: the terminal was released")
        self._live[terminal_id] = (session_id, sid)
        self._created.add((sid, terminal_id))
        return CreateTerminalResponse(terminal_id=terminal_id)

    def created(self, crow_sid: str, terminal_id: str) -> bool:
        """Whether this member made `terminal_id` for that crow session (a tool call of its may show it)."""
        return (crow_sid, terminal_id) in self._created

    async def output(self, session_id: str, terminal_id: str) -> Any:
        """Its output; one that shows the sandbox did not start on the editor's machine makes every later
        command of the session ask (as crow's own do: terminal_sandbox.py), or plan mode refuse it."""
        sid = self._owner(session_id, terminal_id)
        answer = await self._busy(sid, self._editor.conn.terminal_output(session_id=sid, terminal_id=terminal_id))
        status = answer.exit_status if answer is not None else None
        if status is not None and (why := did_not_start(answer.output, status.exit_code)):
            mark_unavailable(self._session(sid).client, why)
        return answer

    async def wait_for_exit(self, session_id: str, terminal_id: str) -> Any:
        sid = self._owner(session_id, terminal_id)
        return await self._busy(sid, self._editor.conn.wait_for_terminal_exit(session_id=sid, terminal_id=terminal_id))

    async def kill(self, session_id: str, terminal_id: str) -> Any:
        sid = self._owner(session_id, terminal_id)
        return await self._busy(sid, self._editor.conn.kill_terminal(session_id=sid, terminal_id=terminal_id))

    async def release(self, session_id: str, terminal_id: str) -> Any:
        sid = self._owner(session_id, terminal_id)
        del self._live[terminal_id]
        return await self._busy(sid, self._editor.conn.release_terminal(session_id=sid, terminal_id=terminal_id))

    async def release_all(self, crow_sid: str | None = None) -> None:
        """Kill and release the terminals left: of one crow session (its turn ended), or all (the link closed)."""
        if crow_sid is None:
            self.closed = True
        for terminal_id, (_, sid) in list(self._live.items()):
            if crow_sid is None or sid == crow_sid:
                del self._live[terminal_id]
                log.info("member %s left terminal %s: killed and released", self._name, terminal_id)
                await self._end(sid, terminal_id)

    async def _end(self, sid: str, terminal_id: str) -> None:
        conn = self._editor.conn
        with anyio.CancelScope(shield=True):
            for end in (conn.kill_terminal, conn.release_terminal):
                with anyio.move_on_after(END_WAIT):
                    try:
                        await end(session_id=sid, terminal_id=terminal_id)
                    except Exception as exc:  # the editor's failure: logged, and the release is still tried
                        log.warning("member %s: ending terminal %s failed: %r", self._name, terminal_id, exc)

    async def _busy(self, sid: str, request: Awaitable[Any]) -> Any:
        """A request to the editor; waiting for it (a command's exit) is not the member's silence."""
        self.touch(sid)
        try:
            return await request
        finally:
            self.touch(sid)

    def _owner(self, session_id: str, terminal_id: str) -> str:
        """The crow session of a terminal this member created for this session; invalid params for any other id."""
        sid = self._crow_session(session_id)
        if self._live.get(terminal_id) != (session_id, sid):
            raise RequestError.invalid_params({"terminalId": f"no terminal {terminal_id[:80]!r} of this session"})
        return sid

    def _crow_session(self, session_id: str) -> str:
        sid = self._sessions.get(session_id)
        if sid is None or not self.offered() or self._editor.conn is None or self.closed:
            raise RequestError.method_not_found("terminal/*")
        return sid

    async def _cwd(self, session: Session, cwd: str | None) -> str:
        """The real directory inside the roots the command starts in; invalid params otherwise."""
        ws = Workspace.of(session.cwd, session.additional_directories)
        try:
            real, st = await anyio.to_thread.run_sync(lambda: ws.confined.real_path(ws.resolve(cwd or session.cwd)))
        except ToolError as exc:
            raise RequestError.invalid_params({"cwd": str(exc)}) from exc
        if st is None or not stat.S_ISDIR(st.st_mode):
            raise RequestError.invalid_params({"cwd": f"{cwd} is not a directory"})
        return real

    async def _permit(self, session: Session, line: str) -> Sandbox:
        """The sandbox crow's gate gives the line as a run_command call; refused: a JSON-RPC error saying why."""
        [tool] = terminal_tools(Workspace.of(session.cwd, session.additional_directories))
        arguments = {"command": line}
        view = ToolView(f"{self._name} runs `{line}`", "execute")
        call_id = f"{self._name}-terminal-{uuid.uuid4().hex[:12]}"
        call = PendingCall(id=call_id, name=tool.name, args=arguments, view=view)
        if self._mode(session) == "plan" and (why := await self._permissions.sandbox.unusable(session)):
            raise refused(f"plan mode runs {self._name}'s commands only in the read-only sandbox, and here {why}")
        if why := await self._permissions(session, call, tool):
            raise refused(f"crow did not run {self._name}'s command: {why}")
        if self._mode(session) == "plan" and call.sandbox.level != "read_only":
            raise refused(f"plan mode runs {self._name}'s commands only in the read-only sandbox")
        return call.sandbox

    def _mode(self, session: Session) -> str:
        return self._permissions.mode(session)
