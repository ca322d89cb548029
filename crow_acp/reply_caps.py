"""Bounds on one model reply ([limits] in config.toml): its size, and how many of its tool calls run.

A model is others' code too: a reply of 50 MB, or of 200 calls that each start a process, must not
take crow's memory or the machine with it. The size is counted as the reply streams, and the stream
is closed once it passes the limit; the part shown is kept, and the model (and the user) are told.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import TypeVar

from .config import LimitsConfig
from .events import ToolResult

T = TypeVar("T")


@dataclass
class ReplyBudget:
    """Characters a reply may still send (text, reasoning and tool arguments together)."""

    limit: int
    used: int = 0
    cut: bool = False

    def take(self, text: str) -> str:
        """The part of `text` that fits; once something did not fit, the reply is `cut`."""
        room = self.limit - self.used
        if len(text) > room:
            self.cut, text = True, text[: max(room, 0)]
        self.used += len(text)
        return text

    def note(self) -> str:
        return (
            f"\n\n[crow cut this reply here: it passed the limit of {self.limit:,} characters per reply"
            " (limits.reply_chars). Tool calls in it were not run. Say less at a time.]"
        )


async def close_stream(stream: AsyncIterator[T]) -> None:
    """Close a reply's stream now (its HTTP response with it), not whenever the collector gets to it."""
    if isinstance(stream, AsyncGenerator):
        await stream.aclose()


def over_cap(limits: LimitsConfig, count: int) -> ToolResult:
    """The result of each call of a reply past limits.tool_calls_per_reply."""
    cap = limits.tool_calls_per_reply
    text = (
        f"Not run: the reply had {count} tool calls and crow runs at most {cap} per reply "
        f"(limits.tool_calls_per_reply). The first {cap} ran; call the others again in a later reply."
    )
    return ToolResult(text, is_error=True)
