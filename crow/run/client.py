"""The ACP client side of `crow run` and `crow chat`: session updates go to a View, permission requests fail
closed, and what the session advertises (its options, commands, usage) is kept for the chat's commands."""

from __future__ import annotations

import asyncio
from typing import Any

from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

from crow.run.view import ToolState, View

ALLOW_ANSWERS = {"y": "allow_once", "yes": "allow_once", "a": "allow_always", "always": "allow_always"}
"""The only answers that allow. Anything else (empty, EOF, garbage, "n") refuses."""
CANCELLED = RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


def decide(answer: str | None, options: list[Any]) -> RequestPermissionResponse:
    """Fail closed: allow only when the answer clearly selects an allow option the agent offered."""
    kind = ALLOW_ANSWERS.get((answer or "").strip().lower())
    chosen = next((option for option in options if kind and option.kind == kind), None)
    if chosen is None:
        chosen = next((option for option in options if option.kind == "reject_once"), None)
    if chosen is None:
        return CANCELLED
    return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id))


class TerminalClient:
    def __init__(self, view: View) -> None:
        self.view = view
        self.tools: dict[str, ToolState] = {}
        self.replaying = False
        """Set while session/load replays history: it goes to `transcript` when set, else nowhere (seen)."""
        self.transcript: list[Any] | None = None
        self.commands: list[Any] = []
        """The session's slash commands (available_commands_update): skills, MCP prompts."""
        self.config_options: list[Any] = []
        """The session's options (mode, model, ...), as last advertised."""
        self.usage: Any = None
        """The last usage_update: context tokens used, and the session's cost when the profile has prices."""
        self._questions: set[asyncio.Future[str | None]] = set()

    def session_opened(self, config_options: list[Any] | None) -> None:
        self.config_options = list(config_options or [])

    def _state(self, update: Any) -> tuple[ToolState, bool]:
        first = update.tool_call_id not in self.tools
        state = self.tools.setdefault(update.tool_call_id, ToolState(update.tool_call_id))
        state.merge(update)
        return state, first

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        kind = update.session_update
        if kind == "available_commands_update":
            self.commands = list(update.available_commands)
        elif kind == "config_option_update":
            self.config_options = list(update.config_options)
        elif kind == "usage_update":
            self.usage = update
            self.view.usage(update)
        elif self.replaying:
            if self.transcript is not None:
                self.transcript.append(update)
        elif kind in ("agent_message_chunk", "agent_thought_chunk") and update.content.type == "text":
            (self.view.text if kind == "agent_message_chunk" else self.view.thought)(update.content.text)
        elif kind in ("tool_call", "tool_call_update"):
            state, first = self._state(update)
            if first and state.status == "failed" and not state.raw_input:  # a report, e.g. a dead MCP server
                self.view.warning(": ".join([state.title, *state.texts()]))
            else:
                self.view.tool(state, first)
        elif kind == "plan":
            self.view.plan(list(update.entries))

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **_: Any) -> Any:
        state = self._state(tool_call)[0]
        question = asyncio.ensure_future(self.view.ask(state, options))
        self._questions.add(question)
        try:
            await asyncio.wait({question})
        finally:
            question.cancel()  # when this request itself is cancelled, the question goes with it
            self._questions.discard(question)
        if question.cancelled():  # the turn was cancelled (Ctrl-C in crow chat) while the user was asked
            return CANCELLED
        return decide(question.result(), options)

    def cancel_questions(self) -> None:
        for question in list(self._questions):
            question.cancel()
