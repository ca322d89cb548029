"""A turn's parts: the calls of one reply as they stream in, the reply, and the turn the loop runs.

The tool gate, the history rules and the permission policy speak these types; the loop runs them.

A reply's bounds ([limits] in config.toml): a model is others' code too. A reply of 50 MB, or of 200
calls that each start a process, must not take crow's memory or the machine with it. The size is
counted as the reply streams, and the stream is closed once it passes the limit; the part shown is
kept, and the model (and the user) are told.

A reply's draft: the editor shows a reply as it streams, but the reply is recorded when its stream
ends. A crow killed mid-stream would lose text the editor already showed, so once a reply has streamed
for DRAFT_EVERY seconds a draft of it is stored, and rewritten every DRAFT_EVERY seconds after: a
SIGKILL loses at most that much. A short reply is written once, when it ends. A draft holds text only
(tool calls are recorded complete or not at all), so a history that ends in one is valid for any
provider.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..config import LimitsConfig
from ..events import ToolResult, ToolView, Usage
from ..history import Attachment, CutKind, EntryMeta, StoredMessage
from ..plugin.hooks import CrowCallbacks
from ..plugin.session import Sandbox, Tool
from ..util.text import clean_value
from .request import RequestChain
from .session import Session
from .session_view import SessionView

MAX_NAME = 256
"""Characters of a tool name kept from the stream (real ones have at most 64)."""
PermissionGate = Callable[[Session, "PendingCall", Tool, ToolResult | None], Awaitable[str | None]]
"""Given the call and its preview (what it would do), returns None to allow it, or why it may not run."""


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:12]}"


@dataclass
class PendingCall:
    id: str
    name: str = ""
    fragments: list[str] = field(default_factory=list)
    view: ToolView | None = None
    args: dict[str, Any] | None = None
    """The arguments as a JSON object, parsed once the reply is complete."""
    problem: str | None = None
    """Why the arguments are unusable (not JSON, not an object)."""
    images: list[tuple[str, str]] = field(default_factory=list)
    """Images the tool returned, shown to a vision model after all of the reply's results."""
    write_targets: frozenset[str] | None = None
    """The real paths of the call's edits, as the permission policy resolved and checked them."""
    sandbox: Sandbox = field(default_factory=Sandbox)
    """How a local command of the call runs, as the permission policy decided it."""

    @property
    def arguments(self) -> str:
        return "".join(self.fragments)

    @property
    def shown_args(self) -> dict[str, Any]:
        """For the editor: the parsed arguments, or the raw text the model sent."""
        return self.args if self.args is not None else {"_raw": self.arguments}

    def complete(self) -> None:
        try:
            value = json.loads(self.arguments or "{}")
        except (ValueError, RecursionError) as exc:  # RecursionError: nested deeper than Python recurses
            self.problem = str(exc) or type(exc).__name__
            return
        if isinstance(value, dict):
            self.args = clean_value(value)  # a "\ud800" escape in the arguments must not reach a tool
        else:
            self.problem = f"expected a JSON object, got {type(value).__name__}"


@dataclass
class Reply:
    # Parts, joined once: `+=` on a string per chunk is quadratic in the reply's length.
    text_parts: list[str] = field(default_factory=list)
    reasoning_parts: list[str] = field(default_factory=list)
    calls: list[PendingCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage | None = None
    attachments: list[Attachment] = field(default_factory=list)
    """The provider's own parts of the reply (signed thinking, encrypted reasoning), kept with it."""
    message: dict[str, Any] | None = None
    """What was recorded; None when the model said nothing at all."""
    cut: CutKind | None = None
    """"steered": a steering message cut the stream off."""


@dataclass
class Turn:
    session: Session
    callbacks: CrowCallbacks
    permit: PermissionGate
    max_steps: int
    tool_timeout: float
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    request: RequestChain = field(default_factory=RequestChain)
    """The steps acp adds to each model request (the plan note), after the core's own (request.py)."""

    @property
    def access(self) -> SessionView:
        return SessionView(self.session)


def check_new_calls(calls: Iterable[PendingCall], earlier: Iterable[dict[str, Any]], fresh: Callable[[], str]) -> None:
    """A reply's calls before they are recorded: an id already used in the session (or in this reply)
    or an unusable one is replaced, and the call is marked so that it answers with an error."""
    used = {
        call.get("id") for message in earlier for call in (message.get("tool_calls") or []) if isinstance(call, dict)
    }
    for call in calls:
        if call.id in used or not call.id or len(call.id) > 128:
            original, call.id = call.id, fresh()
            call.args, call.problem = None, f"the call id {original[:40]!r} was already used; call the tool again"
        used.add(call.id)


# ---- One reply's bounds ----

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


# ---- One reply's draft ----

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
