"""One model reply as it streams: its bounds, and its draft kept in the store as it grows.

Bounds ([limits] in config.toml): a model is others' code too. A reply of 50 MB, or of 200 calls that
each start a process, must not take crow's memory or the machine with it. The size is counted as the
reply streams, and the stream is closed once it passes the limit; the part shown is kept, and the
model (and the user) are told.

The draft: the editor shows a reply as it streams, but the reply is recorded when its stream ends. A
crow killed mid-stream would lose text the editor already showed, so once a reply has streamed for
DRAFT_EVERY seconds a draft of it is stored, and rewritten every DRAFT_EVERY seconds after: a SIGKILL
loses at most that much. A short reply is written once, when it ends. A draft holds text only (tool
calls are recorded complete or not at all), so a history that ends in one is valid for any provider.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ..config import LimitsConfig
from ..events import ToolResult
from ..history import CutKind, EntryMeta, StoredMessage

if TYPE_CHECKING:
    from .session import Session

T = TypeVar("T")

CALLS_PAST_CAP = 16
"""A reply with this many times limits.tool_calls_per_reply calls is cut: each call would cost a result."""


@dataclass
class ReplyBudget:
    """Characters a reply may still send (text, reasoning and tool arguments together), and its calls."""

    limit: int
    max_calls: int
    used: int = 0
    cut: str | None = None
    """Why the reply was cut; None while it is within its limits."""

    @classmethod
    def of(cls, limits: LimitsConfig) -> ReplyBudget:
        return cls(limits.reply_chars, limits.tool_calls_per_reply * CALLS_PAST_CAP)

    def take(self, text: str) -> str:
        """The part of `text` that fits; once something did not fit, the reply is `cut`.

        Every chunk costs at least one character: a stream of empty chunks is bounded too."""
        room = self.limit - self.used
        if max(len(text), 1) > room:
            self.cut, text = (
                self.cut or f"the limit of {self.limit:,} characters per reply (limits.reply_chars)",
                text[: max(room, 0)],
            )
        self.used += max(len(text), 1)
        return text

    def new_call(self, count: int) -> bool:
        """Whether the reply may start its `count`-th call."""
        if count > self.max_calls:
            self.cut = self.cut or f"{self.max_calls:,} tool calls (limits.tool_calls_per_reply x {CALLS_PAST_CAP})"
        return self.cut is None

    def note(self) -> str:
        return (
            f"\n\n[crow cut this reply here: it passed {self.cut}. Tool calls in it were not run. Say less at a time.]"
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


# ---- The draft ----

DRAFT_EVERY = 0.25
"""Seconds of streamed text a SIGKILL may lose; also how often a long reply's row is rewritten."""


class Draft:
    def __init__(self, session: Session, message_id: str) -> None:
        self.session = session
        self.message_id = message_id
        self.entry: StoredMessage | None = None
        self._due = time.monotonic() + DRAFT_EVERY

    def keep(self, text_parts: list[str], reasoning_parts: list[str]) -> None:
        """Store the reply so far if the last draft is DRAFT_EVERY old (cheap to call per chunk)."""
        if time.monotonic() < self._due:
            return
        self._due = time.monotonic() + DRAFT_EVERY
        text = {"role": "assistant", "content": "".join(text_parts)}
        self.settle(text, "".join(reasoning_parts) or None, cut="streaming")  # a load finds it marked as cut

    def settle(self, message: dict[str, Any], reasoning: str | None, cut: CutKind | None = None) -> None:
        """Store `message` as the reply: the draft's row rewritten, or a new row if there was none."""
        meta = EntryMeta(message_id=self.message_id, reasoning=reasoning, cut=cut)
        if self.entry is None:
            self.entry = self.session.record(message, meta)
        else:
            self.session.rewrite(self.entry, message, meta)
