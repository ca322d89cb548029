"""The ACP client side of `crow run`: session updates go to a View, permission requests fail closed."""

from __future__ import annotations

from typing import Any

from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

from crow.run.view import ToolState, View

ALLOW_ANSWERS = {"y": "allow_once", "yes": "allow_once", "a": "allow_always", "always": "allow_always"}
"""The only answers that allow. Anything else (empty, EOF, garbage, "n") refuses."""


def decide(answer: str | None, options: list[Any]) -> RequestPermissionResponse:
    """Fail closed: allow only when the answer clearly selects an allow option the agent offered."""
    kind = ALLOW_ANSWERS.get((answer or "").strip().lower())
    chosen = next((option for option in options if kind and option.kind == kind), None)
    if chosen is None:
        chosen = next((option for option in options if option.kind == "reject_once"), None)
    if chosen is None:
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
    return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id))


class TerminalClient:
    def __init__(self, view: View) -> None:
        self.view = view
        self.tools: dict[str, ToolState] = {}
        self.replaying = False
        """Set while session/load replays history the user has already seen."""

    def _state(self, update: Any) -> tuple[ToolState, bool]:
        first = update.tool_call_id not in self.tools
        state = self.tools.setdefault(update.tool_call_id, ToolState(update.tool_call_id))
        state.merge(update)
        return state, first

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        if self.replaying:
            return
        kind = update.session_update
        if kind in ("agent_message_chunk", "agent_thought_chunk") and update.content.type == "text":
            (self.view.text if kind == "agent_message_chunk" else self.view.thought)(update.content.text)
        elif kind in ("tool_call", "tool_call_update"):
            state, first = self._state(update)
            if first and state.status == "failed" and not state.raw_input:  # a report, e.g. a dead MCP server
                self.view.warning(": ".join([state.title, *state.texts()]))
            else:
                self.view.tool(state, first)
        elif kind == "plan":
            self.view.plan(list(update.entries))
        elif kind == "usage_update":
            self.view.usage(update)

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **_: Any) -> Any:
        state = self._state(tool_call)[0]
        return decide(await self.view.ask(state, options), options)
