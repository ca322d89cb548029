"""What `crow run` shows, whatever draws it: tool call state, the View interface, diffs and answers."""

from __future__ import annotations

import difflib
import os
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
    raw_output: Any = None
    started: float | None = None
    """When it started running (monotonic), for the elapsed time."""

    def merge(self, update: ToolCallStart | ToolCallProgress) -> None:
        self.title = update.title if update.title is not None else self.title
        self.kind = update.kind if update.kind is not None else self.kind
        self.raw_input = update.raw_input if update.raw_input is not None else self.raw_input
        self.raw_output = update.raw_output if update.raw_output is not None else self.raw_output
        if update.content is not None:
            self.content = list(update.content)
        if update.status is not None:
            self.status = update.status
        if self.status == "in_progress" and self.started is None:
            self.started = time.monotonic()

    @property
    def ending(self) -> str:
        """How a command ended, in a word or two (its exit status, its signal), for the failed call's line."""
        raw = self.raw_output if isinstance(self.raw_output, dict) else {}
        if raw.get("timed_out"):
            return "timed out"
        if isinstance(raw.get("signal"), str):
            return f"killed by {raw['signal']}"
        if isinstance(raw.get("exit_code"), int):
            return f"exit {raw['exit_code']}"
        return ""

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started if self.started is not None else 0.0

    @property
    def shown_status(self) -> str:
        """The status with how a failed command ended: "failed · exit 3"."""
        return f"{self.status} · {self.ending}" if self.status == "failed" and self.ending else self.status

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


def shown_path(path: str, cwd: str) -> str:
    """A path as the user reads it: relative to the session's directory when inside it, else as it is."""
    inside = cwd and os.path.isabs(path) and os.path.commonpath([cwd, path]) == cwd
    return os.path.relpath(path, cwd) if inside else path


def unified_diff(item: Any, cwd: str, context: int = 3) -> list[str]:
    """An ACP diff item as unified diff lines (no trailing newlines); a new file is all additions. The headers
    name the file as git does (a/notes.txt) when it is inside `cwd`, by its absolute path when not."""
    old = (item.old_text or "").splitlines()
    new = (item.new_text or "").splitlines()
    path = shown_path(item.path, cwd)
    before, after = (path, path) if os.path.isabs(path) else (f"a/{path}", f"b/{path}")
    return list(difflib.unified_diff(old, new, before, after, n=context, lineterm=""))


def closing_line(stop_reason: str, session_id: str, used: int | None, cost: Any) -> str:
    """The run's last line: how the turn ended, its tokens and cost when known, and the session to continue."""
    parts = [stop_reason]
    if used:
        parts.append(f"{used:,} tokens")
    if cost is not None:
        parts.append(f"{cost.amount:.4f} {cost.currency}")
    return f"[{' · '.join(parts)} · session {session_id}]"


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
