"""A client that answers permission questions from a list, and the tool calls the policy tests make."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from crow_acp.testing import Reply, ToolCall
from support.helpers import RecordingClient


class AnsweringClient(RecordingClient):
    """Answers each permission request with the next of `answers`; `on_ask` runs before answering."""

    def __init__(self, answers: list[str], on_ask: Callable[[], Awaitable[None]] | None = None) -> None:
        super().__init__()
        self.answers, self.on_ask = list(answers), on_ask

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> Any:
        if self.on_ask is not None:
            await self.on_ask()
        self.permission = self.answers.pop(0)
        return await super().request_permission(session_id, tool_call, options, **kwargs)

    def titles(self) -> list[str]:
        return [tool_call.title for tool_call, _ in self.permission_requests]


def write(path: str, call_id: str) -> ToolCall:
    return ToolCall("write_file", {"path": path, "content": "[core]\n\tfsmonitor = touch PWNED\n"}, id=call_id)


def command(line: str, call_id: str) -> ToolCall:
    return ToolCall("run_command", {"command": line}, id=call_id)


def one_by_one(calls: list[ToolCall]) -> list[Reply]:
    return [*(Reply(tool_calls=[call]) for call in calls), Reply(text="done")]
