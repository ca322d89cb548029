"""The compaction callback and its /compact command.

One object serves as the post_response callback (as in seed 001) and, placed in pre_request too,
checks again before each model call: that is where tool results and the new user message have
been added, and where a trigger_compaction() from an end_turn callback is honoured before the
model sees the long history. Each check costs O(new messages) (see ledger.py).

Compaction never loops: the automatic check runs at most once per user turn, whatever happens,
and an explicit request (trigger_compaction or /compact) compacts once. Failure is soft: the
history is only touched after a non-empty summary came back.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from crow_acp.api import SessionAccess, SlashCommand
from crow_acp.errors import CrowError

from .cut import Entry, head_size, plan_cut
from .ledger import THREAD_CHARS, TokenLedger
from .summary import SYSTEM, summary_request
from .tokens import CHARS, encoder_for

log = logging.getLogger(__name__)

TITLE = "Compacting context"
WINDOW_SHARE = 0.8
"""Without a threshold, compact at this share of the model's context window."""
TAIL_SHARE = 0.5
"""The kept tail may use at most this share of the threshold, so one compaction leaves room to work."""
PRECISE_SHARE = 0.5
"""Below this share of the threshold the character estimate is enough to know no compaction is
due; past it the real tokenizer (tens of MB, ~0.2 s to load) takes over. Small sessions never load it."""
MAX_SESSIONS = 256
"""Sessions whose counts are remembered; the least recently used are forgotten (and recounted)."""


@dataclass
class Outcome:
    compacted: bool
    message: str
    """What to tell the user."""


@dataclass
class _State:
    ledger: TokenLedger
    tried: dict[str, Any] | None = None
    """The message that began the turn in which automatic compaction last ran."""


class Compaction:
    """Compacts a session's history when it passes `threshold` tokens (None: 80% of the window)."""

    def __init__(self, threshold: int | None = 100_000, keep_last: int = 10) -> None:
        self.threshold = threshold
        self.keep_last = keep_last
        self.commands = [
            SlashCommand(
                "compact",
                "Summarize the older conversation now to free context",
                self.command,
                hint="what the summary should focus on (optional)",
            )
        ]
        self._states: OrderedDict[str, _State] = OrderedDict()

    async def __call__(self, session: SessionAccess, **kwargs: Any) -> None:
        hook = kwargs.get("hook")
        if hook == "end_session":
            self._states.pop(session.session_id, None)
            return
        if hook == "begin_session" or "loaded" in kwargs:
            return  # begin_session: the first check counts whatever was loaded
        state = await self._synced(session)
        if "response" in kwargs and (usage := kwargs.get("usage")) is not None:
            state.ledger.calibrate(usage.prompt_tokens, _sent(session.entries(), kwargs["response"]))
            await self._sharpen(state, session)
        focus = session.take_compaction_request()
        if focus is not None:
            await self.compact(session, focus=focus, keep_last=0)
        elif state.ledger.size > self.threshold_for(session) and state.tried is not state.ledger.turn:
            state.tried = state.ledger.turn
            await self.compact(session)

    async def command(self, session: SessionAccess, argument: str) -> str:
        """`/compact [focus]`: compact now, keeping only the latest turn verbatim."""
        return (await self.compact(session, focus=argument, keep_last=0)).message

    def threshold_for(self, session: SessionAccess) -> int:
        return self.threshold if self.threshold is not None else int(session.context_window * WINDOW_SHARE)

    async def size(self, session: SessionAccess) -> int:
        """Tokens the next model call would carry."""
        return (await self._synced(session)).ledger.size

    async def compact(self, session: SessionAccess, *, focus: str = "", keep_last: int | None = None) -> Outcome:
        """Summarize all but the kept tail (keep_last None: the configured tail; 0: the latest turn)."""
        ledger = (await self._synced(session)).ledger
        entries = session.entries()
        keep = self.keep_last if keep_last is None else keep_last
        cut = plan_cut(entries, ledger.counts, keep_last=keep, budget=int(self.threshold_for(session) * TAIL_SHARE))
        if cut is None:
            return Outcome(False, "Nothing to compact yet: only the latest turn is in the context.")
        older, first_kept, before = entries[head_size(entries) : cut], entries[cut], ledger.size
        compaction = await session.report_compaction(
            "in_progress", title=TITLE, text=f"Summarizing {len(older)} messages"
        )
        summary, error = await self._summarize(session, older, focus, compaction)
        if not error and not (session.entries() is entries and entries[cut] is first_kept):
            error = "the history changed while the summary was being written"
        if error:
            log.warning("compaction failed in session %s: %s", session.session_id, error)
            text = f"Compaction failed: {error}. The history is unchanged."
            await session.report_compaction("failed", title=TITLE, text=text, compaction_id=compaction)
            return Outcome(False, text)
        session.compact_messages(len(entries) - cut, summary, compaction)
        after = await self.size(session)
        text = f"{before:,} → {after:,} tokens"
        log.info("compacted session %s: %d messages, %s", session.session_id, len(older), text)
        await session.report_compaction("completed", title=TITLE, text=text, summary=summary, compaction_id=compaction)
        await session.report_usage(after)
        return Outcome(True, f"Context compacted: {text}.")

    async def _summarize(
        self, session: SessionAccess, older: Sequence[Entry], focus: str, compaction: str
    ) -> tuple[str, str | None]:
        """The summary, or the reason there is none."""
        request = summary_request(older, focus=focus, max_chars=session.context_window * 2)
        try:
            summary = (await session.prompt(request, system=SYSTEM)).strip()
        except CrowError as exc:
            return "", str(exc)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                text = "Cancelled. The history is unchanged."
                await session.report_compaction("cancelled", title=TITLE, text=text, compaction_id=compaction)
            raise
        return summary, None if summary else "the model returned an empty summary"

    async def _synced(self, session: SessionAccess) -> _State:
        state = self._states.get(session.session_id)
        if state is None:
            state = self._states[session.session_id] = _State(TokenLedger(CHARS))
            while len(self._states) > MAX_SESSIONS:
                self._states.popitem(last=False)
        self._states.move_to_end(session.session_id)
        entries, compactions = session.entries(), session.get_context("compactions", 0)
        if state.ledger.pending_chars(entries, compactions) >= THREAD_CHARS:
            await anyio.to_thread.run_sync(state.ledger.sync, entries, compactions)
        else:
            state.ledger.sync(entries, compactions)
        await self._sharpen(state, session)
        return state

    async def _sharpen(self, state: _State, session: SessionAccess) -> None:
        """Switch from the character estimate to the real tokenizer once the count starts to matter."""
        if state.ledger.encoder is not CHARS or state.ledger.size < PRECISE_SHARE * self.threshold_for(session):
            return
        encoder = await anyio.to_thread.run_sync(encoder_for, session.model_name)  # loading takes ~0.2 s
        if encoder is not CHARS:
            entries, compactions = session.entries(), session.get_context("compactions", 0)
            state.ledger = await anyio.to_thread.run_sync(state.ledger.recounted, encoder, entries, compactions)


def default_compact(threshold: int | None = 100_000, keep_last: int = 10) -> Compaction:
    """The compaction callback, for post_response (and pre_request, to act before the next model call).

    `threshold` is in prompt tokens; None means 80% of the model's context window. `keep_last` is
    how many recent messages stay verbatim (the cut moves back to where that user turn began).
    """
    return Compaction(threshold, keep_last)


def _sent(entries: Sequence[Entry], response: Any) -> int:
    """How many history messages the call that produced `response` was sent."""
    if response is None:
        return len(entries)  # the model said nothing, so nothing was recorded after the call
    for index in range(len(entries) - 1, max(-1, len(entries) - 9), -1):
        if entries[index].message is response:
            return index
    return len(entries) - 1
