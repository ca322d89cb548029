"""A turn's types: the calls of one reply as they stream in, the reply, and the turn the loop runs.

The tool gate, the history rules and the permission policy speak these types; the loop runs them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..config import LimitsConfig
from ..events import ToolResult, ToolView, Usage
from ..history import Attachment, CutKind
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
