"""`crow run` on a terminal, drawn with rich.

Text streams as it arrives; reasoning is dimmed behind a bar; tool calls that are pending or running
live in a small transient region at the bottom (spinner, elapsed time, the output's last lines) and
are printed for good once they finish, with their diff. Permission prompts show what will change.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from crow.run.answer import StreamingAnswer
from crow.run.plain import REFUSED, read_answer
from crow.run.screen import Screen
from crow.run.view import FINISHED, ToolState, closing_line, command_of, printable, unified_diff

TAIL_LINES = 6
PREVIEW_LINES = 8
DIFF_LINES = 80
BAR = "│ "


def diff_text(item: Any, cwd: str) -> Text:
    lines = unified_diff(item, cwd)
    shown, hidden = lines[:DIFF_LINES], len(lines) - DIFF_LINES
    text = Text()
    for line in shown:
        style = (
            "bold"
            if line.startswith(("---", "+++"))
            else "green"
            if line.startswith("+")
            else "red"
            if line.startswith("-")
            else "cyan"
            if line.startswith("@@")
            else "dim"
        )
        text.append("  " + printable(line) + "\n", style=style)
    if hidden > 0:
        text.append(f"  … {hidden} more lines\n", style="dim")
    if not shown:
        text.append(f"  {printable(item.path)}: no change\n", style="dim")
    return text


class ActiveCalls:
    """The live region: every tool call that has not finished, re-rendered on each refresh."""

    def __init__(self, answer: StreamingAnswer | None) -> None:
        self.answer = answer
        """The answer streaming as Markdown, above the calls (crow chat); None: the answer is printed as it comes."""
        self.calls: dict[str, ToolState] = {}
        self.spinners: dict[str, Spinner] = {}
        self.footer: list[Text] = []
        """Below the calls: what crow chat's user typed during the turn (crow/chat/typeahead.py)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.answer is not None:
            yield self.answer
        for state in list(self.calls.values()):
            if state.status != "in_progress":
                yield Text.assemble(("○ ", "dim"), printable(state.title), ("  pending", "dim"))
                continue
            spinner = self.spinners.setdefault(state.id, Spinner("dots", style="cyan"))
            spinner.update(text=Text.assemble(printable(state.title), (f"  running {state.elapsed:.0f}s", "dim")))
            yield spinner
            for line in state.tail(TAIL_LINES):
                yield Text("    " + printable(line), style="dim", no_wrap=True, overflow="ellipsis")
        yield from self.footer


class LiveView:
    def __init__(self, screen: Screen, *, approve: bool, verbose: bool, cwd: str, markdown: bool = False) -> None:
        self.approve = approve
        self.cwd = cwd
        self.verbose = verbose
        self.screen = screen
        # rich measures the terminal on fds 0-2; 1 and 2 are caught (screen.py), so with stdin not a terminal
        # either (`crow run -`), it is measured here, once.
        width = None if sys.stdin.isatty() else os.get_terminal_size(screen.out.fileno()).columns
        self.out = Console(file=screen.out, highlight=False, width=width)
        self.err = Console(file=screen.err, highlight=False, width=width)
        self.answer = StreamingAnswer() if markdown else None
        self.active = ActiveCalls(self.answer)
        self.live: Live | None = None
        self.streaming: str | None = None  # "text" or "thought" while a stream is mid-line
        self.at_line_start = True
        self.warned: set[str] = set()
        self.used: int | None = None
        self.cost: Any = None
        self.input_paused: Callable[[], AbstractContextManager[None]] = nullcontext
        """Around a permission question: crow chat stops reading the keys typed ahead while it asks."""

    # -- the live region
    def _show_live(self) -> None:
        if (self.active.calls or self.active.footer or (self.answer and self.answer.text)) and self.live is None:
            self.live = Live(
                self.active,
                console=self.out,
                refresh_per_second=8,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self.live.start()

    def _hide_live(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None

    def _end_stream(self) -> None:
        if self.streaming == "answer" and self.answer is not None:  # the live region is hidden: print it for good
            if (markdown := self.answer.take()) is not None:
                self.out.print(markdown)
            self.streaming = None
            return
        if not self.at_line_start:
            self.out.print()
            self.at_line_start = True
        if self.streaming == "thought":
            self.out.print()
        self.streaming = None

    def _write(self, text: str, style: str | None = None) -> None:
        self.out.print(printable(text), end="", style=style, markup=False, highlight=False, soft_wrap=True)
        self.at_line_start = text.endswith("\n")

    def typing(self, queued: list[str], typed: str) -> None:
        """crow chat's type-ahead under the live answer: the queued messages, then the line being typed."""
        self.active.footer = [Text("queued: " + printable(line), style="dim") for line in queued]
        if typed:
            self.active.footer.append(Text("> " + printable(typed)))
        if self.active.footer:
            self._show_live()
        elif not (self.active.calls or (self.answer and self.answer.text)):
            self._hide_live()

    # -- the stream
    def text(self, chunk: str) -> None:
        if self.answer is not None:
            if self.streaming == "thought":
                self._end_stream()
            self.streaming = "answer"
            self.answer.add(chunk)
            self._show_live()
            return
        self._hide_live()
        if self.streaming == "thought":
            self._end_stream()
        self.streaming = "text"
        self._write(chunk)

    def thought(self, chunk: str) -> None:
        self._hide_live()
        if self.streaming == "answer":
            self._end_stream()
        if self.streaming != "thought":
            self._end_stream()
            self.streaming = "thought"
            self._write(BAR, "dim")
        self._write(chunk.replace("\n", "\n" + BAR), "dim italic")

    def tool(self, state: ToolState, first: bool) -> None:
        if self.streaming:
            self._hide_live()
            self._end_stream()
        if state.status not in FINISHED:
            self.active.calls[state.id] = state
            self._show_live()
            return
        self.active.calls.pop(state.id, None)
        self.active.spinners.pop(state.id, None)
        self._print_finished(state)
        if not self.active.calls:
            self._hide_live()

    def _print_finished(self, state: ToolState) -> None:
        took = f" {state.elapsed:.1f}s" if state.started is not None else ""
        if state.status == "completed":
            self.out.print(Text.assemble(("✓ ", "green"), printable(state.title), (took, "dim")))
        else:
            self.out.print(
                Text.assemble(("✗ ", "red"), printable(state.title), (f" {state.shown_status}{took}", "red"))
            )
        for diff in state.diffs():
            self.out.print(diff_text(diff, self.cwd), end="")
        if not state.diffs():
            lines = state.lines()
            while lines and not lines[-1].strip():
                lines.pop()
            style = "red" if state.status == "failed" else "dim"
            for line in lines[:PREVIEW_LINES]:
                self.out.print(Text("  " + printable(line), style=style, no_wrap=True, overflow="ellipsis"))
            if len(lines) > PREVIEW_LINES:
                self.out.print(Text(f"  … {len(lines) - PREVIEW_LINES} more lines", style="dim"))

    def plan(self, entries: list[Any]) -> None:
        marks = {"completed": "☑", "in_progress": "◐"}
        self._hide_live()
        self._end_stream()
        self.out.print(Group(*(Text(f"  {marks.get(e.status, '☐')} {printable(e.content)}") for e in entries)))
        self._show_live()

    def usage(self, update: Any) -> None:
        self.used, self.cost = update.used, update.cost

    def warning(self, message: str) -> None:
        if message in self.warned:
            return
        self.warned.add(message)
        self._hide_live()
        self._end_stream()
        self.err.print(Text("⚠ " + printable(message), style="yellow"))
        self._show_live()

    def log(self, line: str) -> None:
        self.err.print(Text(printable(line), style="dim"), markup=False)

    # -- questions and endings
    async def ask(self, state: ToolState, options: list[Any]) -> str | None:
        if self.approve:
            return "y"
        self._hide_live()
        self._end_stream()
        self.out.print(Text.assemble(("? ", "yellow bold"), (f"Allow {printable(state.title)}?", "bold")))
        if command := command_of(state):
            self.out.print(Text("  $ " + printable(command), style="cyan"))
        for diff in state.diffs():
            self.out.print(diff_text(diff, self.cwd), end="")
        try:
            if not sys.stdin.isatty():
                self.out.print(Text("  " + REFUSED, style="yellow"))
                return None
            question = "  [y] allow once  [a] always  [N] reject: "
            with self.input_paused():
                answer = await read_answer(question, self.screen.out)
            if not answer.endswith("\n"):
                self.out.print()  # Ctrl-D left the cursor on the question line
            return answer
        except asyncio.CancelledError:  # the turn was cancelled (crow chat): the cursor leaves the question line
            self.out.print()
            raise
        finally:
            self._show_live()

    def error(self, message: str, session_id: str) -> None:
        self._hide_live()
        self._end_stream()
        self.err.print(Text("crow: " + printable(message), style="red"))
        self.err.print(Text(f"[error · session {session_id}]", style="dim"))

    def stop(self, stop_reason: str, session_id: str) -> None:
        self._hide_live()
        self._end_stream()
        self.err.print(Text(closing_line(stop_reason, session_id, self.used, self.cost), style="dim"))

    def interrupted(self) -> None:
        self._hide_live()
        self._end_stream()
        self.err.print(Text("interrupted", style="dim"))

    def close(self) -> None:
        self._hide_live()
