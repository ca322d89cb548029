"""`GET /metrics` of `crow serve`: what the server is doing, in Prometheus text format.

Fed by an observer on every connection's agent (the loop's events: turns, model calls, tool calls,
usage; events.py) and by the connection itself (a prompt's start; permission questions and the
client's answers, which are ACP messages). Label values are bounded: stop reasons, tool kinds and
statuses, answers and error kinds come from fixed sets (anything else is "other"), models are the
model ids of each call (the session's profile, which a client may switch among the configured ones),
at most 32 of them; no session id or user text is ever a label.

The connection counts and the leases this server holds are read when scraped; the store's workers
report each operation's latency, the wait in their queue included (store/worker.py), as "write" (the
writes nobody waits for) or "call" (reads, lease changes, flushes).

A model call's latency runs from the prompt (or the last tool result the model waits for) to its
ModelCallFinished; its time to first token, to the first text, thought or tool call of the reply.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from ..events import (
    ErrorOccurred,
    Event,
    ModelCallFinished,
    TextDelta,
    ThoughtDelta,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
    TurnFinished,
)

STOP_REASONS = frozenset({"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"})
TOOL_KINDS = frozenset({"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode"})
STATUSES = frozenset({"completed", "failed"})
ANSWERS = frozenset({"allow_once", "allow_always", "reject_once", "reject_always", "allow_unsandboxed", "cancelled"})
MAX_OPEN_LABELS = 32
"""Distinct error kinds, and distinct models, a server labels; any further one is "other"."""
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _bounded(value: Any, allowed: frozenset[str]) -> str:
    return value if isinstance(value, str) and value in allowed else "other"


STORE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
"""Store operations take a millisecond, not a second: the default buckets would lump them all in the first."""
STORE_KINDS = frozenset({"write", "call"})


class ServeMetrics:
    def __init__(
        self,
        connections: Callable[[], int] = lambda: 0,
        sessions: Callable[[], int] = lambda: 0,
        leases: Callable[[], int] = lambda: 0,
    ) -> None:
        r = self.registry = CollectorRegistry()
        self.turns = Counter("crow_turns", "Turns ended, by stop reason", ["stop_reason"], registry=r)
        self.model_calls = Counter("crow_model_calls", "Model calls that returned", ["model"], registry=r)
        self.model_seconds = Histogram("crow_model_call_seconds", "Model call latency", ["model"], registry=r)
        self.first_token = Histogram("crow_model_first_token_seconds", "Time to first token", ["model"], registry=r)
        self.errors = Counter("crow_model_errors", "Turns ended by an error, by kind", ["kind"], registry=r)
        self.tool_calls = Counter("crow_tool_calls", "Tool calls, by kind and outcome", ["kind", "outcome"], registry=r)
        self.tool_seconds = Histogram("crow_tool_call_seconds", "Tool call duration", ["kind"], registry=r)
        self.questions = Counter("crow_permission_questions", "Permission questions asked", registry=r)
        self.answers = Counter("crow_permission_answers", "Permission answers, by option", ["answer"], registry=r)
        self.tokens = Counter("crow_tokens", "Tokens, by model and type", ["model", "type"], registry=r)
        self.cost = Counter("crow_cost", "Spend, by model and currency", ["model", "currency"], registry=r)
        Gauge("crow_connections", "Open ACP connections", registry=r).set_function(connections)
        Gauge("crow_sessions", "Sessions open on the connections", registry=r).set_function(sessions)
        Gauge("crow_leases_held", "Session leases this server holds in the store", registry=r).set_function(leases)
        self.store_seconds = Histogram(
            "crow_store_seconds", "Store operation latency, queue included", ["kind"], registry=r, buckets=STORE_BUCKETS
        )
        self._error_kinds: set[str] = set()
        self._models: set[str] = set()

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def store_timing(self, kind: str, seconds: float) -> None:
        """A store worker's report (crow_acp/store/worker.py), on its thread: prometheus_client is thread-safe."""
        self.store_seconds.labels(_bounded(kind, STORE_KINDS)).observe(seconds)

    def observer(self, model: str) -> AgentMetrics:
        return AgentMetrics(self, model)

    def answered(self, result: Any) -> None:
        outcome = result.get("outcome") if isinstance(result, dict) else None
        if not isinstance(outcome, dict):
            self.answers.labels("other").inc()
            return
        answer = outcome.get("optionId") if outcome.get("outcome") == "selected" else outcome.get("outcome")
        self.answers.labels(_bounded(answer, ANSWERS)).inc()

    def error_kind(self, error: BaseException | None) -> str:
        return _first_few(type(error).__name__ if error is not None else "unknown", self._error_kinds)

    def model_label(self, model: str) -> str:
        return _first_few(model[:64], self._models)


@dataclass
class _Session:
    call_start: float
    first_token: bool = False
    model: str = ""
    """The model of the session's last call."""
    waited: float | None = None
    """The call's time to first token, observed once its ModelCallFinished names the model."""
    tools: dict[str, tuple[str, float]] = field(default_factory=dict)


class AgentMetrics:
    """One agent's observer: per session, the call in flight and the tools running (gone at turn end)."""

    def __init__(self, metrics: ServeMetrics, model: str) -> None:
        self.metrics, self.model = metrics, model
        self._sessions: dict[str, _Session] = {}
        self._costs: dict[str, float] = {}

    def turn_started(self, session_id: str) -> None:
        self._sessions[session_id] = _Session(time.monotonic())

    def __call__(self, event: Event) -> None:
        m, now = self.metrics, time.monotonic()
        state = self._sessions.get(event.session_id)
        if isinstance(event, TurnFinished):
            m.turns.labels(_bounded(event.stop_reason, STOP_REASONS)).inc()
            self._first_token(self._sessions.pop(event.session_id, None))
        elif isinstance(event, ErrorOccurred):
            m.errors.labels(m.error_kind(event.error)).inc()
        elif isinstance(event, ModelCallFinished):
            self._model_call(event, state, now)
        elif isinstance(event, TextDelta | ThoughtDelta | ToolCallStarted) and state and not state.first_token:
            state.first_token, state.waited = True, now - state.call_start
        if isinstance(event, ToolCallStarted) and state is not None:
            state.tools[event.call_id] = (_bounded(event.view.kind, TOOL_KINDS), now)
        elif isinstance(event, ToolCallRunning) and state is not None and event.call_id in state.tools:
            state.tools[event.call_id] = (state.tools[event.call_id][0], now)  # the permission wait left out
        elif isinstance(event, ToolCallFinished):
            kind, started = state.tools.pop(event.call_id, ("other", now)) if state else ("other", now)
            m.tool_calls.labels(kind, _bounded(event.status, STATUSES)).inc()
            m.tool_seconds.labels(kind).observe(now - started)
            if state is not None:  # the next model call starts once the last result is in
                self._first_token(state)  # a call that reported no usage, or tool calls shown after it
                state.call_start, state.first_token = now, False

    def _model_call(self, event: ModelCallFinished, state: _Session | None, now: float) -> None:
        m, usage = self.metrics, event.usage
        model = m.model_label(event.model) if event.model else self.model
        m.model_calls.labels(model).inc()
        if state is not None:
            m.model_seconds.labels(model).observe(now - state.call_start)
            state.model = model
            self._first_token(state)
        m.tokens.labels(model, "input").inc(usage.prompt_tokens)
        m.tokens.labels(model, "output").inc(usage.completion_tokens)
        m.tokens.labels(model, "cached").inc(usage.cache_read_tokens)
        if event.cost is not None:  # the session's running total: the step since the last one
            before = self._costs.get(event.session_id, 0.0)
            if event.cost.amount > before:
                m.cost.labels(model, event.cost.currency[:8]).inc(event.cost.amount - before)
            self._costs[event.session_id] = event.cost.amount

    def _first_token(self, state: _Session | None) -> None:
        if state is not None and state.waited is not None:
            self.metrics.first_token.labels(state.model or self.model).observe(state.waited)
            state.waited = None


def _first_few(value: str, seen: set[str]) -> str:
    """`value` as a label, while fewer than MAX_OPEN_LABELS distinct ones were seen; else "other"."""
    if value not in seen and len(seen) >= MAX_OPEN_LABELS:
        return "other"
    seen.add(value)
    return value
