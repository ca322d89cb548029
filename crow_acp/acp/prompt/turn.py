"""What one session/prompt does once it holds the session: a model turn or a slash command, under
one cancel scope and one error handler, then end_turn and the editor's last updates.

AcpAgent owns a TurnRunner; its `prompt` handler (agent.py) serializes prompts per session and
calls `run`, which calls the loop (core/loop.py `run_turn`).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from acp import RequestError

from ...api import CrowCallbacks, SlashCommand
from ...core.cut_turn import CONTINUE, GO_ON, Resume, resumption
from ...core.hooks import run_hooks
from ...core.loop import CANCELLED, run_turn
from ...core.request import RequestChain
from ...core.session import INTERRUPTED, Session, answer_open_calls
from ...core.session_view import SessionView
from ...core.turn import Turn
from ...errors import CommandError, CrowError
from ...events import ErrorOccurred, Event, TextDelta, TitleChanged, TurnFinished
from ...history import EntryMeta
from ...model.retries import retries_shown
from ...policy.modes import note_mode_change, plan_note
from ...policy.permissions import Permissions
from ...telemetry import gen_ai, spans
from ...timeline.timeline import Checkpoints
from ...util.secrets import redact_json
from ..updates.warnings import model_error
from .mcp import report_failures, wait_for_servers
from .message import PromptRefused, model_content, split_command, stored_blocks, user_text
from .titles import name_session

if TYPE_CHECKING:
    from ...config import Config
    from ...model.profiles import Models

log = logging.getLogger(__name__)
TURN_FAILED = {"event": "turn_failed"}
"""The `event` of the log line a failed turn writes (--log-format json shows it)."""
REQUEST_CHAIN = RequestChain((plan_note,))
"""What the default agent adds to every model request, after the core's own steps (core/request.py)."""


Spawn = Callable[[Coroutine[Any, Any, Any]], None]
"""Runs work in the background, beside the turn (the agent keeps the task and cancels it on shutdown)."""


class TurnRunner:
    def __init__(
        self,
        config: Config,
        models: Models,
        callbacks: Callable[[], CrowCallbacks],
        emit: Callable[[Event], Awaitable[None]],
        spawn: Spawn,
    ) -> None:
        self.config = config
        self.models = models
        self._callbacks = callbacks
        """The agent's callbacks as they are now (set_callbacks may replace them after this is built)."""
        self._emit = emit
        self._spawn = spawn
        self.permissions = Permissions(config.permissions, config.sandbox, config.home)
        """The permission gate of every turn: the config does not change while the agent lives."""
        self.checkpoints = Checkpoints(config.home, config.checkpoints)
        """The sessions' file checkpoints, one before and one after each prompt (the agent shares its opener's)."""
        self.model_titles = True
        """Whether a session's first turn asks the model for a title. A MultiAgent turns it off for the
        members whose sessions the editor never sees: the graph's title is the entry's."""

    async def run(self, session: Session, blocks: list[dict[str, Any]], cancels: int) -> str:
        """One prompt, in a session whose lock the caller holds: its stop reason, or the RequestError
        the editor gets. Traced as one invoke_agent span (telemetry/gen_ai.py) when tracing is on (off, no
        call into telemetry/); either way the log lines meanwhile name the session."""
        if spans.on:
            return await self._traced(session, blocks, cancels)
        named = spans.SESSION.set(session.id)
        try:
            return await self._run(session, blocks, cancels)
        finally:
            spans.SESSION.reset(named)

    async def _traced(self, session: Session, blocks: list[dict[str, Any]], cancels: int) -> str:
        with gen_ai.invoke_agent(str(session.data.get("agent") or "crow"), session.id, user_text(blocks)) as span:
            stop = await self._run(session, blocks, cancels)
            span.set("crow.stop_reason", stop)
            return stop

    async def _run(self, session: Session, blocks: list[dict[str, Any]], cancels: int) -> str:
        text = user_text(blocks)
        command = session.commands.get(split_command(text)[0])
        stop, error, row = "cancelled", None, None
        if not session.control.cancelled_since(cancels):  # not cancelled while it waited behind the turn before it
            if command is None:
                await wait_for_servers(session)  # the first prompt waits for servers still starting
                try:
                    content = await model_content(session, blocks)
                except PromptRefused as refused:  # say why instead of a provider's 400; nothing is recorded
                    await self._emit(TextDelta(session.id, uuid.uuid4().hex, str(refused)))
                    return "end_turn"
                note_mode_change(session)  # at the end, before the prompt: the requests' prefix stays as it was
                row = session.record(
                    {"role": "user", "content": content}, EntryMeta("prompt", blocks=redact_json(stored_blocks(blocks)))
                ).row_id
                await self.checkpoints.before_prompt(session.id, [session.cwd, *session.additional_directories], row)
                await report_failures(session)
                work = lambda: self.model_turn(session, blocks)  # noqa: E731
            elif command.name == CONTINUE and (how := resumption(session.history)):
                work = lambda: self._resume(session, how, blocks)  # noqa: E731
            else:
                work = lambda: self._run_command(session, command, text)  # noqa: E731
            stop, error = await self._guarded(session, cancels, work)
            await self.checkpoints.after_prompt(session.id, [session.cwd, *session.additional_directories], row)
        answer_open_calls(session, CANCELLED if stop == "cancelled" else INTERRUPTED)
        await report_failures(session)  # a server that died during the turn
        # After an error no stop reason reaches the editor (it gets the JSON-RPC error); hooks see "error".
        ended, message = ("error", str(error)) if error else (stop, None)
        name = command.name if command else None
        await run_hooks(
            self._callbacks().end_turn, SessionView(session), "end_turn", stop_reason=ended, error=message, command=name
        )
        stop = "cancelled" if session.control.cancelled_since(cancels) else stop  # also a cancel during end_turn work
        await self._finish_turn(session, "" if command else text, stop, error)
        if error:
            raise RequestError(-32603, str(error) if isinstance(error, CrowError) else f"Internal error: {error!r}")
        return stop

    async def _guarded(self, session: Session, cancels: int, work: Any) -> tuple[str, Exception | None]:
        """A turn or a slash command in the turn's cancel scope: (stop reason, the error that ended it)."""
        if session.control.cancelled_since(cancels):  # arrived while the user message was being recorded
            return "cancelled", None
        try:
            with session.control.cancellable() as scope, retries_shown(session.id, session.emit):
                stop = await work()
            return ("cancelled" if scope.cancelled_caught else stop), None
        except Exception as exc:  # the one top-level handler of a prompt: the editor must get an answer
            if not isinstance(exc, CrowError):
                log.exception("turn failed", extra=TURN_FAILED)
            else:  # e.g. the model's final error after retries: crow.log keeps it for the user
                log.error("turn failed: %s", exc, extra=TURN_FAILED)
            return "end_turn", exc

    async def model_turn(self, session: Session, blocks: list[dict[str, Any]]) -> str:
        """The work of a prompt once the user message is recorded: the model loop. A foreign member
        (multi/foreign) relays it to another ACP agent instead."""
        return await run_turn(self._turn_for(session))

    async def _resume(self, session: Session, how: Resume, blocks: list[dict[str, Any]]) -> str:
        """`/continue`: a model turn on the history as it is (after a cut reply, the model is told to go on)."""
        if how == "go_on":
            session.record({"role": "user", "content": GO_ON}, EntryMeta("prompt", blocks=stored_blocks(blocks)))
        return await self.model_turn(session, blocks)

    def _turn_for(self, session: Session) -> Turn:
        return Turn(
            session,
            self._callbacks(),
            self.permissions,
            max_steps=self.config.max_steps,
            tool_timeout=self.config.timeouts.mcp_call + 5,
            limits=self.config.limits,
            request=REQUEST_CHAIN,
        )

    async def _finish_turn(self, session: Session, text: str, stop: str, error: BaseException | None) -> None:
        if error:
            if (notice := model_error(session.id, error)) is not None:
                await self._emit(notice)
            await self._emit(ErrorOccurred(session.id, str(error), error))
        await self._emit(TurnFinished(session.id, stop))
        await self.name(session, text)

    async def name(self, session: Session, text: str) -> None:
        """Name the session after `text` unless it has a title, then let the model write a better one
        in the background."""
        if title := session.take_title(text):
            await self._emit(TitleChanged(session.id, title))
            if self.config.titles.enabled and self.model_titles:  # a better one from the model, in the background
                self._spawn(name_session(session, text, self.models, self.config.titles))

    async def _run_command(self, session: Session, command: SlashCommand, text: str) -> str:
        try:
            output = await command.handler(SessionView(session), split_command(text)[1])
        except Exception as exc:  # a command is plugin code: its failure is the prompt's clear error
            log.exception("command /%s failed", command.name)
            raise CommandError(f"/{command.name} failed: {type(exc).__name__}: {exc}") from exc
        if output:
            await self._emit(TextDelta(session.id, uuid.uuid4().hex, output))
        return "end_turn"
