"""The seam every span goes through: `span(name, ...)` is a shared no-op until a tracer is installed.

The loop, the tool gate, MCP and compaction open spans here (through gen_ai.py); otel.py installs the
OpenTelemetry tracer when tracing is on. Off, nothing of OpenTelemetry is imported, and the callers do
not call in here at all: they read `on` (a module attribute, no call) and skip their spans, so a turn
runs no line of telemetry/ (tests/telemetry/test_off_path.py).
"""

from __future__ import annotations

import contextvars
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Literal, Protocol

Value = str | bool | int | float | Sequence[str]
Kind = Literal["internal", "client"]


class Span(Protocol):
    """An open span: attributes may be added until it ends."""

    def set(self, key: str, value: Value) -> None: ...

    def fail(self, kind: str, message: str = "") -> None:
        """Mark the span failed: `kind` is the error.type (an exception class or a reason)."""


class Tracer(Protocol):
    def span(self, name: str, kind: Kind, attributes: dict[str, Value]) -> AbstractContextManager[Span]:
        """A span around the body, current inside it (so spans opened there are its children)."""

    def start(self, name: str, kind: Kind, attributes: dict[str, Value]) -> Ended:
        """A span that outlives the caller's body (a compaction reported in steps), child of the current one."""

    def trace_id(self) -> str | None:
        """The current trace's id in hex, or None outside any span."""

    def shutdown(self) -> None:
        """Export what is left, then stop."""


class Ended(Span, Protocol):
    def end(self) -> None: ...


class _Nothing:
    def set(self, key: str, value: Value) -> None:
        return None

    def fail(self, kind: str, message: str = "") -> None:
        return None

    def end(self) -> None:
        return None


NOTHING = _Nothing()
OFF: AbstractContextManager[Span] = nullcontext(NOTHING)
"""The span of a caller that checked `on` and found tracing off: reused, and no call into this module."""
_tracer: Tracer | None = None
on = False
"""Whether a tracer is installed: what the loop, the tools and MCP check before they open a span."""
record_content = False
"""Whether spans carry prompts, replies, tool arguments and results ([telemetry] record_content)."""
SESSION: contextvars.ContextVar[str | None] = contextvars.ContextVar("crow_session", default=None)
"""The session whose turn is running here: log lines name it (log_json.py)."""
USER: contextvars.ContextVar[str | None] = contextvars.ContextVar("crow_user", default=None)
"""The `crow serve` user whose request is handled here (web/app.py sets it): log lines name them."""


def install(tracer: Tracer | None, *, content: bool = False) -> None:
    global _tracer, record_content, on
    _tracer, record_content, on = tracer, content, tracer is not None


def tracing() -> bool:
    return _tracer is not None


def span(name: str, attributes: dict[str, Value], kind: Kind = "internal") -> AbstractContextManager[Span]:
    return OFF if _tracer is None else _tracer.span(name, kind, attributes)


def start(name: str, attributes: dict[str, Value], kind: Kind = "internal") -> Ended:
    return NOTHING if _tracer is None else _tracer.start(name, kind, attributes)


def trace_id() -> str | None:
    return None if _tracer is None else _tracer.trace_id()


def shutdown() -> None:
    """Flush and stop the tracer (crow's commands call this on their way out); a no-op when off."""
    global _tracer, on
    tracer, _tracer, on = _tracer, None, False
    if tracer is not None:
        tracer.shutdown()
