"""The model's answer as Markdown: while it streams, the live region shows the last lines it renders to; once
it ends (a tool call, the turn's end), it is printed whole, for good."""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import Markdown
from rich.segment import Segment

from crow.run.view import printable

RESERVED_LINES = 4
"""Rows the live region leaves free below a streaming answer: the tool calls, the cursor."""


class StreamingAnswer:
    def __init__(self) -> None:
        self.text = ""

    def add(self, chunk: str) -> None:
        self.text += chunk

    def markdown(self) -> Markdown:
        return Markdown(printable(self.text))  # no escape sequence from the model reaches the terminal

    def take(self) -> Markdown | None:
        """The whole answer to print, once; None when there was none."""
        text, self.text = self.text, ""
        return Markdown(printable(text)) if text.strip() else None

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not self.text.strip():
            return
        lines = console.render_lines(self.markdown(), options, pad=False)
        room = max(3, console.size.height - RESERVED_LINES)
        for line in lines[-room:]:
            yield from line
            yield Segment.line()
