"""Progress summaries (seed 000's SummarizationCallback): short notes on what the agent is doing.

    progress = progress_summaries(summarizer, every_events=5, every_seconds=30).attach(agent, ...)

An observer collects finished tool calls per session. After `every_events` of them, or when an
event arrives `every_seconds` after the last note, it asks the summarizer for one or two
sentences and shows them as a "Progress: …" tool call. The summarizer runs beside the turn, not
in its way; a turn waits for its pending notes before it returns (and drops them on cancel).

summarizer: None (the session's own model, as a side call), an AcpAgent (its model), or
`async def summarize(text) -> str`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable

from crow_acp.acp.agent import AcpAgent
from crow_acp.api import SessionAccess
from crow_acp.events import Event, ToolCallFinished, TurnFinished

log = logging.getLogger(__name__)

Summarizer = AcpAgent | Callable[[str], Awaitable[str] | str] | None
"""None (the session's own model), an AcpAgent (its model), or `async def summarize(text) -> str`."""
SUMMARIZER_SYSTEM = (
    "You write progress notes for a user watching a coding agent. One or two short sentences, no preamble."
)


class ProgressSummaries:
    def __init__(self, summarizer: Summarizer = None, *, every_events: int = 5, every_seconds: float = 30.0) -> None:
        self.summarizer = summarizer
        self.every_events = max(1, every_events)
        self.every_seconds = every_seconds
        self._agents: list[AcpAgent] = []
        self._events: dict[str, list[str]] = {}
        self._since: dict[str, float] = {}
        self._tasks: dict[str, set[asyncio.Task[None]]] = {}

    def attach(self, *agents: AcpAgent) -> ProgressSummaries:
        """Observe these agents (the members of a MultiAgent, say); returns self."""
        for agent in agents:
            agent.add_observer(self)
            self._agents.append(agent)
        return self

    async def __call__(self, event: Event) -> None:
        if isinstance(event, ToolCallFinished):
            self._collect(event)
        elif isinstance(event, TurnFinished):
            await self._settle(event.session_id, wait=event.stop_reason != "cancelled")

    def _collect(self, event: ToolCallFinished) -> None:
        sid = event.session_id
        pending = self._events.setdefault(sid, [])
        pending.append(f"- {event.name} ({event.status}): {event.result.text[:300]}")
        now = time.monotonic()
        since = self._since.setdefault(sid, now)
        if len(pending) >= self.every_events or now - since >= self.every_seconds:
            self._events[sid], self._since[sid] = [], now
            task = asyncio.create_task(self._note(sid, pending))
            self._tasks.setdefault(sid, set()).add(task)
            task.add_done_callback(self._tasks[sid].discard)

    async def _settle(self, sid: str, *, wait: bool) -> None:
        tasks = list(self._tasks.pop(sid, ()))
        self._events.pop(sid, None)
        self._since.pop(sid, None)
        for task in tasks:
            if not wait:
                task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _note(self, sid: str, lines: list[str]) -> None:
        session = self._session(sid)
        if session is None:
            return
        text = (
            "Tool calls since the last note:\n" + "\n".join(lines) + "\n\nWhat is the agent doing, and how far is it?"
        )
        try:
            note = (await self._summarize(session, text)).strip()
        except Exception:  # the top of a background task: a failed note must not break the turn
            log.exception("progress summary failed")
            return
        if note:
            first = note.splitlines()[0]
            await session.report(f"Progress: {first[:100]}", kind="think", text=note)

    async def _summarize(self, session: SessionAccess, text: str) -> str:
        if self.summarizer is None:
            return await session.prompt(text, system=SUMMARIZER_SYSTEM)
        if isinstance(self.summarizer, AcpAgent):
            messages = [{"role": "system", "content": SUMMARIZER_SYSTEM}, {"role": "user", "content": text}]
            return await self.summarizer.model.complete(messages)
        result = self.summarizer(text)
        return await result if inspect.isawaitable(result) else result

    def _session(self, sid: str) -> SessionAccess | None:
        for agent in self._agents:
            if agent.is_open(sid):
                return agent.access(sid)
        return None


def progress_summaries(
    summarizer: Summarizer = None, *, every_events: int = 5, every_seconds: float = 30.0
) -> ProgressSummaries:
    """An observer that shows short progress notes; attach it with `.attach(agent, ...)`."""
    return ProgressSummaries(summarizer, every_events=every_events, every_seconds=every_seconds)
