"""`await agent.run("text")` and `agent.run_sync("text")`: one prompt in process, without an editor.

A run opens a session in `cwd` (or continues `session_id`: one open here, or one in the store), sends the
text as ACP's session/prompt would, and answers a RunResult: the reply's text, the stop reason, the tokens
used and the messages the run added. No permission is asked: a tool that needs one is refused, and the model
reads why, unless `permissions=` decides (a function of the ACP ToolCallUpdate, sync or async, returning
True to allow the call). With an editor attached, the editor is asked as always, and `permissions=` is not
used. Cancelling the task that runs run() cancels the turn; the run answers stop_reason "cancelled", with
the history as valid as after session/cancel. What the editor would be answered as a JSON-RPC error (a cwd
that does not exist, a failed turn) is a RunError here, one line saying why.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..core.session_view import SessionView
from ..errors import CrowError
from ..events import Event, ModelCallFinished, Usage

if TYPE_CHECKING:
    from acp.schema import PermissionOption, PromptResponse, RequestPermissionResponse, ToolCallUpdate

    from ..core.session import Session
    from ..store import SessionStore
    from .sessions.opener import SessionOpener
    from .sessions.registry import OpenSessions
    from .updates.outbox import Outbox

Permissions = Callable[["ToolCallUpdate"], bool | Awaitable[bool]]
"""Decides a permission question without an editor: True allows the call once, False refuses it."""


class Runnable(Protocol):
    """What a run needs of the agent (AcpAgent is one)."""

    opener: SessionOpener
    open_sessions: OpenSessions
    outbox: Outbox

    @property
    def store(self) -> SessionStore: ...
    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None) -> Any: ...
    async def resume_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None) -> Any: ...
    async def prompt(self, prompt: list[Any], session_id: str) -> PromptResponse: ...
    async def cancel(self, session_id: str) -> None: ...
    async def shutdown(self) -> None: ...


class RunsInProcess:
    """AcpAgent's base for run() and run_sync()."""

    async def run(
        self,
        text: str,
        *,
        cwd: str | None = None,
        session_id: str | None = None,
        permissions: Permissions | None = None,
    ) -> RunResult:
        """One prompt in process: a new session in `cwd` (the current directory), or `session_id` continued."""
        return await run(cast(Runnable, self), text, cwd=cwd, session_id=session_id, permissions=permissions)

    def run_sync(
        self,
        text: str,
        *,
        cwd: str | None = None,
        session_id: str | None = None,
        permissions: Permissions | None = None,
    ) -> RunResult:
        """run() for code without an event loop (a script, a test); the agent is shut down after it."""
        return run_sync(cast(Runnable, self), text, cwd=cwd, session_id=session_id, permissions=permissions)


class RunError(CrowError, RuntimeError):
    """agent.run() failed: run_sync() inside a running event loop, a session that cannot open, the turn's error."""


@dataclass(frozen=True)
class RunResult:
    """What one run answered."""

    text: str
    """The text of the reply: the last assistant message, without tool calls or reasoning ("" if none)."""
    stop_reason: str
    """end_turn, cancelled, max_tokens, max_turn_requests, refusal, or error."""
    usage: Usage
    """Tokens of every model call of the run, summed."""
    session_id: str
    """Pass it to the next run to continue this session."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    """The messages the run added, the user's first, as the model saw them."""


async def run(
    agent: Runnable,
    text: str,
    *,
    cwd: str | None = None,
    session_id: str | None = None,
    permissions: Permissions | None = None,
) -> RunResult:
    if not isinstance(text, str):
        raise RunError(f"agent.run() takes the prompt as text, not {type(text).__name__}")
    where = os.path.abspath(cwd or os.getcwd())  # noqa: ASYNC240 (no I/O: a path joined to the current directory)
    session = await _session(agent, where, session_id)
    before, history = len(session.history), session.history
    usage = _Tokens(session.id)
    agent.outbox.observers.append(usage)
    asker = _Asker(permissions) if permissions is not None and session.client is None else None
    if asker is not None:
        session.client = asker
    try:
        stop = await _prompt(agent, session.id, text)
    finally:
        agent.outbox.observers.remove(usage)
        if asker is not None and session.client is asker:
            session.client = None
    added = session.history[before:] if session.history is history else session.history[-1:]
    reply = SessionView(session).get_summary()
    return RunResult(reply, stop, usage.total, session.id, [dict(entry.message) for entry in added])


def run_sync(agent: Runnable, text: str, **options: Any) -> RunResult:
    """run() in a new event loop, then the agent shut down (its MCP servers and model client closed)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RunError("agent.run_sync() cannot run inside a running event loop: use `await agent.run(...)`")

    async def once() -> RunResult:
        try:
            return await run(agent, text, **options)
        finally:
            await agent.shutdown()

    return asyncio.run(once())


async def _session(agent: Runnable, cwd: str, session_id: str | None) -> Session:
    from acp import RequestError

    try:
        if session_id is None:
            session_id = (await agent.new_session(cwd=cwd, mcp_servers=[])).session_id
        elif not agent.open_sessions.is_open(session_id) and session_id not in agent.open_sessions.pool.evicted:
            if await agent.store.get(session_id) is None:
                raise RunError(f"agent.run(): no session {session_id!r} in the store")
            await agent.resume_session(cwd=cwd, session_id=session_id, mcp_servers=[])
        return await agent.opener.live(session_id)
    except RequestError as exc:  # what the editor would be answered (a cwd that does not exist), said in one line
        detail = ", ".join(f"{k}: {v}" for k, v in exc.data.items()) if isinstance(exc.data, dict) else exc.data
        raise RunError(f"agent.run(): {exc}" + (f" ({detail})" if detail else "")) from exc


async def _prompt(agent: Runnable, session_id: str, text: str) -> str:
    """The prompt's stop reason; a turn that failed (the model endpoint, a lost lease) is a RunError saying why."""
    from acp import RequestError

    try:
        return await _answered(agent, session_id, text)
    except RequestError as exc:  # what the editor would be answered, as crow's own error
        raise RunError(f"agent.run(): the turn failed: {exc}") from exc


async def _answered(agent: Runnable, session_id: str, text: str) -> str:
    """A cancel of the caller's task cancels the turn, which then answers (cancelled)."""
    turn = asyncio.ensure_future(agent.prompt(prompt=[{"type": "text", "text": text}], session_id=session_id))
    try:
        return str((await asyncio.shield(turn)).stop_reason)
    except asyncio.CancelledError:
        if turn.done() and not turn.cancelled():
            raise
        await agent.cancel(session_id=session_id)
        done = await turn  # the turn ends as after session/cancel: history repaired, end_turn run
        if (task := asyncio.current_task()) is not None:
            task.uncancel()  # the cancel was answered: the run returns "cancelled" instead of raising
        return str(done.stop_reason)


class _Tokens:
    """Sums the usage of the session's model calls while the run lasts."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.total = Usage()

    def __call__(self, event: Event) -> None:
        if isinstance(event, ModelCallFinished) and event.session_id == self.session_id:
            prompt = self.total.prompt_tokens + event.usage.prompt_tokens
            self.total = Usage(prompt, self.total.completion_tokens + event.usage.completion_tokens)


class _Asker:
    """Stands in for the editor's session/request_permission: the user's `permissions=` function decides."""

    def __init__(self, decide: Permissions) -> None:
        self.decide = decide

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **_: Any
    ) -> RequestPermissionResponse:
        from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

        allowed = self.decide(tool_call)
        if inspect.isawaitable(allowed):
            allowed = await allowed
        chosen = next((o for o in options if o.kind == "allow_once"), None) if allowed is True else None
        if chosen is None:
            chosen = next((o for o in options if o.kind == "reject_once"), None)
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id))
