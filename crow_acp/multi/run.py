"""One prompt's run through a MultiAgent graph, and the hand-off that bridges and patterns share.

A Run knows the graph's sessions, shows every hand-off to the editor as a tool call
("coder → reviewer"), collects each agent's stop reason so the whole run's can be reported, and
carries the cancel flag. Bridges find the run in a context variable: a bridge's hand-off runs
inside its agent's end_turn hook, in the same task as the MultiAgent's prompt.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import anyio
from acp import RequestError

from ..acp.agent import AcpAgent
from ..acp.prompt.message import as_dicts, to_model_text
from ..acp.updates.shapes import event_update
from ..events import ActivityReported, ToolStatus
from ..plugin.session import SessionAccess
from .children import ChildSessions
from .graph import GRAPH_SESSIONS, Composite, Graph, Node

Prompt = str | list[Any]
"""Text, or ACP content blocks (pydantic or dicts) as the editor sent them."""
CURRENT_RUN: ContextVar[Run | None] = ContextVar("crow_multi_run", default=None)
_FRAME: ContextVar[list[Step] | None] = ContextVar("crow_multi_frame", default=None)
_PATH: ContextVar[tuple[str, ...]] = ContextVar("crow_handoff_path", default=())
"""Session ids of the turns a bridge hand-off is nested in (without a MultiAgent), for cycle refusal."""
BUSY = "its session is already in a turn (a bridge cycle would wait on itself forever), so the hand-off was refused"


@dataclass
class Step:
    """One agent's turn within a run."""

    agent: str
    stop_reason: str = "end_turn"
    summary: str = ""
    error: str | None = None


@dataclass
class Outcome:
    """What asking an agent (and whatever it handed off to) came to."""

    stop_reason: str
    """An ACP stop reason; "error" when a turn failed (see `error`)."""
    summary: str = ""
    """The last agent's summary: what it concluded (SessionAccess.get_summary)."""
    agent: str = ""
    """The last agent that ran."""
    error: str | None = None
    steps: list[Step] = field(default_factory=list)

    @classmethod
    def of(cls, steps: list[Step]) -> Outcome:
        last = steps[-1]
        errors = [f"{step.agent}: {step.error}" for step in steps if step.error]
        stops = [step.stop_reason for step in steps]
        stop = "cancelled" if "cancelled" in stops else "error" if errors else last.stop_reason
        return cls(stop, last.summary, last.agent, "; ".join(errors) or None, list(steps))


Send = Callable[[Any], Awaitable[None]]


@runtime_checkable
class Drivable(Composite, Protocol):
    """A graph a run can drive as one node (a MultiAgent inside another)."""

    async def drive(self, run: Run, prompt: Prompt, source: str | None) -> Outcome: ...


class Run:
    """The state of one prompt of a MultiAgent; drivers (patterns) steer the graph through it."""

    def __init__(
        self, graph: Graph, user_prompt: Prompt, send: Send | None, children: ChildSessions | None = None
    ) -> None:
        self.graph = graph
        self.children = children
        """Set when the editor sees members as child sessions: hand-offs and their work's state go there too."""
        self.user_prompt = user_prompt
        self.cancelled = False
        self.steps: list[Step] = []
        """Every turn of this run, in the order they started."""
        self._send = send
        self._scopes: set[anyio.CancelScope] = set()

    # The entry session's context: its shared keys are the graph's blackboard
    def get_context(self, key: str, default: Any = None) -> Any:
        return self.graph.access(self.graph.entry_name).get_context(key, default)

    def set_context(self, key: str, value: Any) -> None:
        self.graph.access(self.graph.entry_name).set_context(key, value)

    def access(self, agent: AcpAgent) -> SessionAccess:
        return self.graph.access(agent.name)

    # Steering
    async def ask(self, target: Node, prompt: Prompt, *, source: str | None = None) -> Outcome:
        """Run `target` on `prompt` in its session of this graph; a hand-off unless it is the user's prompt.

        The outcome covers every agent the target's bridges handed off to in the meantime.
        """
        if isinstance(target, Drivable):  # a graph inside this one runs in this run
            return await target.drive(self, prompt, source)
        if not isinstance(target, AcpAgent):
            raise TypeError(f"{target!r} is neither an agent nor a graph that a run can drive")
        if target.name not in self.graph.sessions:
            raise ValueError(f"{target.name!r} is not a member of this MultiAgent")
        sid = self.graph.sessions[target.name]
        user = target.name == self.graph.entry_name and prompt is self.user_prompt
        return await run_turn_of(target, sid, prompt, None if user else (source or ""), self.report, self)

    async def side_prompt(self, agent: AcpAgent, text: str, *, system: str | None = None) -> str | None:
        """A side model call on `agent`'s model (history untouched); None when the run was cancelled."""
        if self.cancelled:
            return None
        with anyio.CancelScope() as scope:
            self._scopes.add(scope)
            try:
                return await self.access(agent).prompt(text, system=system)
            finally:
                self._scopes.discard(scope)
        return None

    def record_user(self) -> None:
        """Record the user's prompt in the entry session, for drivers that do not ask the entry with it.

        It is what session/load replays as the user's message.
        """
        blocks = as_dicts(self.user_prompt) if isinstance(self.user_prompt, list) else [text_part(self.user_prompt)]
        self.graph.entry.record_prompt(self.graph.entry_sid, blocks)

    async def report(
        self, title: str, *, status: ToolStatus = "completed", text: str | None = None, activity_id: str | None = None
    ) -> str:
        """Show the run's own progress (hand-offs, verdicts, routing) as a tool call in the editor."""
        activity_id = activity_id or f"run-{uuid.uuid4().hex[:12]}"
        if self._send is not None:
            await self._send(
                event_update(ActivityReported(self.graph.editor_sid, activity_id, title, status, "other", text))
            )
        return activity_id

    def cancel(self) -> None:
        self.cancelled = True
        for scope in list(self._scopes):
            scope.cancel()


Reporter = Callable[..., Awaitable[str]]


async def run_turn_of(
    agent: AcpAgent, sid: str, prompt: Prompt, source: str | None, report: Reporter, run: Run | None = None
) -> Outcome:
    """Prompt `agent` in its session `sid`. `source` None: the user's own message; else a hand-off from it,
    shown through `report` as a tool call that is in progress while the agent (and its bridges) run."""
    text, title = prompt_text(prompt), handoff_title(source, agent.name)
    activity = await report(title, status="in_progress", text=text) if source is not None else None
    children = run.children if run is not None else None
    if children is not None and source is not None:
        await children.handed(source, agent.name, text)
    step = Step(agent.name)
    frame = [step]
    if run is not None:
        run.steps.append(step)
    if agent.in_turn(sid):
        step.stop_reason, step.error = "refusal", BUSY
    elif run is not None and run.cancelled:
        step.stop_reason = "cancelled"
    else:
        frame = await _prompt(agent, sid, prompt, step, source)
    if (parent := _FRAME.get()) is not None:
        parent.extend(frame)
    if children is not None:
        await children.finished(agent.name, step.stop_reason, step.error)
    if activity is not None:
        failed = step.error or step.stop_reason == "cancelled"
        await report(title, status="failed" if failed else "completed", text=step.error or text, activity_id=activity)
    return Outcome.of(frame)


async def _prompt(agent: AcpAgent, sid: str, prompt: Prompt, step: Step, source: str | None) -> list[Step]:
    """The turn itself; returns its frame: this step, then the steps of every hand-off made inside it."""
    frame = [step]
    before = len(agent.access(sid).entries())
    token = _FRAME.set(frame)
    try:
        blocks = prompt if isinstance(prompt, list) else [text_part(prompt)]
        step.stop_reason = (await agent.prompt(prompt=blocks, session_id=sid)).stop_reason
    except RequestError as exc:  # the agent logged it; the hand-off shows it, and the run decides what it means
        step.stop_reason, step.error = "error", str(exc)
    finally:
        _FRAME.reset(token)
    if source is not None:
        agent.mark_handoff(sid, before, source or None)
    step.summary = agent.access(sid).get_summary()
    return frame


def handoff_title(source: str | None, target: str) -> str:
    return f"{source} → {target}" if source else f"→ {target}"


def prompt_text(prompt: Prompt) -> str:
    return prompt if isinstance(prompt, str) else to_model_text(as_dicts(prompt))


def text_part(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


async def hand_off(source: SessionAccess, target: Node, text: str) -> Outcome:
    """Give `text` to `target` as a new prompt in its own session: what a bridge does.

    Inside a MultiAgent the run supplies the target's session and collects its stop reason.
    Alone (agents composed in Python without a MultiAgent) the target's session is found in, or
    created and remembered in, the source session's "graph_sessions" context.
    """
    run = CURRENT_RUN.get()
    if run is not None and (name := run.graph.name_of(source.session_id)) is not None:
        return await run.ask(target, text, source=name)
    if not isinstance(target, AcpAgent):
        raise TypeError("a bridge to a MultiAgent only runs inside a MultiAgent")
    path = (*_PATH.get(), source.session_id)
    if any(target.is_open(sid) for sid in path):  # the target is still in a turn further up this chain
        await source.report(handoff_title("", target.name), status="failed", text=BUSY)
        return Outcome("refusal", agent=target.name, error=BUSY)
    sid = await _session_alone(source, target)
    token = _PATH.set(path)
    try:
        return await run_turn_of(target, sid, text, "", source.report)
    finally:
        _PATH.reset(token)


async def _session_alone(source: SessionAccess, target: AcpAgent) -> str:
    """The target's session for hand-offs from `source`: open, resumed from the store, or new."""
    known = dict(source.get_context(GRAPH_SESSIONS) or {})
    sid = known.get(target.name)
    if sid and target.is_open(sid):
        return sid
    if sid and await target.store.get(sid) is not None:
        await target.resume_session(cwd=source.cwd, session_id=sid, mcp_servers=[])
        return sid
    sid = (await target.new_session(cwd=source.cwd, mcp_servers=[])).session_id
    source.set_context(GRAPH_SESSIONS, {**known, target.name: sid})
    return sid
