"""What `crow run` shows, whatever draws it: tool call state, the View interface, diffs and answers."""

from __future__ import annotations

import difflib
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from acp.schema import ToolCallProgress, ToolCallStart

FINISHED = ("completed", "failed")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """Model or tool text as it may reach a terminal: control characters shown as \\xNN, so an escape
    sequence or a carriage return cannot rewrite the screen or hide part of a command being approved."""
    return _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", text.replace("\r\n", "\n"))


@dataclass
class ToolState:
    """One tool call as the editor would see it, merged from its tool_call and tool_call_update messages."""

    id: str
    title: str = ""
    kind: str | None = None
    status: str = "pending"
    content: list[Any] = field(default_factory=list)
    raw_input: Any = None
    started: float | None = None
    """When it started running (monotonic), for the elapsed time."""

    def merge(self, update: ToolCallStart | ToolCallProgress) -> None:
        self.title = update.title if update.title is not None else self.title
        self.kind = update.kind if update.kind is not None else self.kind
        self.raw_input = update.raw_input if update.raw_input is not None else self.raw_input
        if update.content is not None:
            self.content = list(update.content)
        if update.status is not None:
            self.status = update.status
        if self.status == "in_progress" and self.started is None:
            self.started = time.monotonic()

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started if self.started is not None else 0.0

    def texts(self) -> list[str]:
        from acp.schema import ContentToolCallContent, TextContentBlock  # loaded: the updates came through it

        return [
            item.content.text
            for item in self.content
            if isinstance(item, ContentToolCallContent) and isinstance(item.content, TextContentBlock)
        ]

    def diffs(self) -> list[Any]:
        from acp.schema import FileEditToolCallContent

        return [item for item in self.content if isinstance(item, FileEditToolCallContent)]

    def lines(self) -> list[str]:
        """The text output's lines, without the code fences a command's output comes in."""
        return [line for text in self.texts() for line in text.splitlines() if not line.startswith("```")]

    def tail(self, count: int) -> list[str]:
        """The last lines of the text output: a running command's live output."""
        return self.lines()[-count:]


def unified_diff(item: Any, context: int = 3) -> list[str]:
    """An ACP diff item as unified diff lines (no trailing newlines); a new file is all additions."""
    old = (item.old_text or "").splitlines()
    new = (item.new_text or "").splitlines()
    lines = difflib.unified_diff(old, new, f"a/{item.path}", f"b/{item.path}", n=context, lineterm="")
    return list(lines)


def command_of(state: ToolState) -> str | None:
    raw = state.raw_input
    if isinstance(raw, dict) and isinstance(raw.get("command"), str):
        return raw["command"]
    return None


class View(Protocol):
    """A way to show one run: the live terminal, plain text for pipes, or JSON lines."""

    def text(self, chunk: str) -> None: ...
    def thought(self, chunk: str) -> None: ...
    def tool(self, state: ToolState, first: bool) -> None: ...
    def plan(self, entries: list[Any]) -> None: ...
    def usage(self, update: Any) -> None: ...
    def warning(self, message: str) -> None: ...
    def log(self, line: str) -> None: ...
    async def ask(self, state: ToolState, options: list[Any]) -> str | None:
        """The user's answer to a permission request, as typed; None when nobody can answer."""
        ...

    def error(self, message: str, session_id: str) -> None: ...
    def stop(self, stop_reason: str, session_id: str) -> None: ...
    def interrupted(self) -> None: ...
    def close(self) -> None: ...
