"""`crow run` in a pipe: stdout carries only the answer (or, with --format json, one JSON object per
event); everything else goes to stderr."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from typing import TYPE_CHECKING, Any, TextIO

from crow.run.view import FINISHED, ToolState, closing_line, printable, shown_path

if TYPE_CHECKING:
    from pydantic import BaseModel

    from crow.run.screen import Screen

PREVIEW = 400
_C1 = re.compile("[\x7f-\x9f]")
REFUSED = "permission needed; refused because no terminal can answer (rerun with --yes to allow tools)"


async def read_answer(question: str, stream: TextIO) -> str:
    """A line from stdin without a thread, so Ctrl-C is never stuck behind a blocked read. EOF is ""."""
    stream.write(question)
    stream.flush()
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[str] = loop.create_future()
    fd = sys.stdin.fileno()

    def ready() -> None:
        if not answer.done():
            answer.set_result(sys.stdin.readline())

    loop.add_reader(fd, ready)
    try:
        return await answer
    finally:
        loop.remove_reader(fd)


def _same_file(one: TextIO, other: TextIO) -> bool:
    try:
        return os.path.samestat(os.fstat(one.fileno()), os.fstat(other.fileno()))
    except (OSError, ValueError):  # not a real file (a test's StringIO, a closed stream)
        return False


class PlainView:
    def __init__(self, screen: Screen, *, approve: bool, raw: bool = False, cwd: str = "") -> None:
        self.out, self.err = screen.out, screen.err
        self.cwd = cwd
        self.approve = approve
        self.raw = raw and not self.out.isatty()
        """Write the answer as sent: only into a pipe or file, and only when asked (--raw)."""
        self.at_line_start = True
        self.after_tool = False
        self.thinking = False
        self.warned: set[str] = set()
        self.used: int | None = None
        self.cost: Any = None
        self.dim, self.reset = ("\033[2m", "\033[0m") if self.err.isatty() else ("", "")
        self.shared = _same_file(self.out, self.err)
        """stdout and stderr are one file (`2>&1`): a status line must not start mid-answer-line."""

    def _err(self, line: str, *, dim: bool = False) -> None:
        self._end_thought()
        self._end_answer_line()
        self.err.write((self.dim if dim else "") + printable(line) + (self.reset if dim else "") + "\n")
        self.err.flush()

    def _end_thought(self) -> None:
        if self.thinking:
            self.err.write("\n")
            self.thinking = False

    def text(self, chunk: str) -> None:
        self._end_thought()
        if self.after_tool and not self.at_line_start:
            chunk = "\n" + chunk  # each step's text on its own line
        self.after_tool = False
        self.out.write(chunk if self.raw else printable(chunk))  # a file is read on a terminal later (cat)
        self.out.flush()
        self.at_line_start = chunk.endswith("\n")

    def _end_answer_line(self) -> None:
        if self.shared and not self.at_line_start:
            self.out.write("\n")
            self.out.flush()
            self.at_line_start = True

    def thought(self, chunk: str) -> None:
        self._end_answer_line()
        self.thinking = True
        self.err.write(self.dim + printable(chunk) + self.reset)
        self.err.flush()

    def tool(self, state: ToolState, first: bool) -> None:
        self.after_tool = True
        if first or state.status in FINISHED:
            self._err(f"⚙ {state.title} [{state.shown_status}]")
        if state.status in FINISHED:
            for text in state.texts():
                preview = text if len(text) <= PREVIEW else text[:PREVIEW] + " …"
                self._err("  " + preview.replace("\n", "\n  "))
            for diff in state.diffs():
                self._err(f"  diff {shown_path(diff.path, self.cwd)}")

    def plan(self, entries: list[Any]) -> None:
        for entry in entries:
            self._err(f"  [{entry.status}] {entry.content}")

    def usage(self, update: Any) -> None:
        self.used, self.cost = update.used, update.cost

    def warning(self, message: str) -> None:
        if message not in self.warned:
            self.warned.add(message)
            self._err(f"crow: warning: {message}")

    def log(self, line: str) -> None:
        self._err(line, dim=True)

    async def ask(self, state: ToolState, options: list[Any]) -> str | None:
        if self.approve:
            return "y"
        if not sys.stdin.isatty():
            self._err(f"⚙ {state.title}: {REFUSED}")
            return None
        return await read_answer(f"Allow {state.title}? [y]es / [a]lways / [N]o: ", self.err)

    def error(self, message: str, session_id: str) -> None:
        self._end()
        self._err(f"crow: {message}")
        self._err(f"[error · session {session_id}]", dim=True)

    def stop(self, stop_reason: str, session_id: str) -> None:
        self._end()
        self._err(closing_line(stop_reason, session_id, self.used, self.cost), dim=True)

    def _end(self) -> None:
        if not self.at_line_start:
            self.out.write("\n")
            self.out.flush()
            self.at_line_start = True

    def interrupted(self) -> None:
        self._end()
        self._err("crow: interrupted")

    def close(self) -> None:
        pass


class JsonView:
    """One JSON object per line on stdout: text, thought, tool_call, tool_call_update, plan, usage, stop."""

    def __init__(self, screen: Screen, *, approve: bool, raw: bool = False) -> None:
        self.out = screen.out
        self.approve = approve
        self.raw = raw
        self.plain = PlainView(screen, approve=approve)

    def _emit(self, event_type: str, /, **fields: Any) -> None:
        line = json.dumps({"type": event_type, **fields}, ensure_ascii=False)
        # JSON escapes C0 controls itself; DEL and C1 (0x7f-0x9f) it leaves as they are, and a terminal may obey them.
        self.out.write((line if self.raw else _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", line)) + "\n")
        self.out.flush()

    def text(self, chunk: str) -> None:
        self._emit("text", text=chunk)

    def thought(self, chunk: str) -> None:
        self._emit("thought", text=chunk)

    def tool(self, state: ToolState, first: bool) -> None:
        content = [_dump(item) for item in state.content]
        self._emit(
            "tool_call" if first else "tool_call_update",
            id=state.id,
            title=state.title,
            kind=state.kind,
            status=state.status,
            content=content,
        )

    def plan(self, entries: list[Any]) -> None:
        self._emit("plan", entries=[_dump(entry) for entry in entries])

    def usage(self, update: Any) -> None:
        cost = _dump(update.cost) if update.cost is not None else None
        self._emit("usage", used=update.used, size=update.size, cost=cost)

    def warning(self, message: str) -> None:
        self._emit("warning", message=message)

    def log(self, line: str) -> None:
        self.plain.log(line)

    async def ask(self, state: ToolState, options: list[Any]) -> str | None:
        self._emit("permission", id=state.id, title=state.title, options=[option.option_id for option in options])
        return await self.plain.ask(state, options)

    def error(self, message: str, session_id: str) -> None:
        self._emit("error", message=message, session_id=session_id)
        self.stop("error", session_id)  # a reader waits for `stop`: it is the last object, whatever happened

    def stop(self, stop_reason: str, session_id: str) -> None:
        self._emit("stop", stop_reason=stop_reason, session_id=session_id)

    def interrupted(self) -> None:
        self._emit("stop", stop_reason="interrupted", session_id=None)

    def close(self) -> None:
        pass


def _dump(model: BaseModel) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)
