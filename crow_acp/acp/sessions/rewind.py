"""/rewind and `_crow/rewind`: the conversation and the files back to before one of the user's messages.

    /rewind                 the user's messages, numbered from 1, with the files changed since each
    /rewind N [--chat|--files]
    _crow/rewind {sessionId, messageIndex, chat?, files?}   the same, for a client's button

A rewind runs holding the session's lock: as a slash command it waits behind a running turn (queued);
the extension request is refused while a turn runs. Its steps, in order: plan (the files to put back,
and those changed outside crow since, which ask mode asks about and other modes leave alone), the
journal (timeline/journal.py), the history's tail copied to a fork and deleted from this session, the
files put back, the journal removed. A kill on the way leaves the journal: the next open of the session
finishes the rewind (`recover`) and says so. A member of a graph (MultiAgent) refuses: its members'
histories would rewind one by one.
"""

from __future__ import annotations

import logging
import shlex
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
from acp import RequestError

from ...api import SlashCommand
from ...core.session import Session
from ...core.session_view import SessionView
from ...errors import CheckpointError
from ...events import ActivityReported, NoticeRaised, TitleChanged
from ...timeline import journal
from ...timeline.restore import Change, apply
from ...timeline.timeline import Checkpoints, Timeline
from .rewind_text import Outcome, listing, may_overwrite, prompts
from .stored import copy_session

if TYPE_CHECKING:
    from ...store import SessionStore
    from ..updates.outbox import Outbox
    from .options import SessionOptions
    from .registry import OpenSessions

log = logging.getLogger(__name__)
HINT = "[N] [--chat | --files]"
BUSY = "A turn is running in this session: wait for it to end (or cancel it), then rewind."
TITLE = "Rewind finished"
GRAPH = "Rewind is not available in a multi-agent session: its members' histories cannot rewind as one."


class RewindRefused(CheckpointError):
    """A rewind that cannot be done as asked; nothing was changed."""


class Rewinds:
    def __init__(self, store: Callable[[], SessionStore], sessions: OpenSessions, outbox: Outbox,
                 options: SessionOptions, checkpoints: Checkpoints, ask_timeout: float) -> None:  # fmt: skip
        self._store = store
        self.ask_timeout = ask_timeout
        """How long a question about files changed outside crow waits ([permissions] timeout)."""
        self.sessions, self.outbox, self.options, self.checkpoints = sessions, outbox, options, checkpoints
        self._recovered: dict[str, str] = {}

    def command(self) -> SlashCommand:
        return SlashCommand("rewind", "List your messages, or go back to before message N", self._command, hint=HINT)

    async def _command(self, access: SessionView, argument: str) -> str:
        session = self.sessions.get(access.session_id)
        try:
            words = shlex.split(argument)
        except ValueError:
            words = argument.split()
        chat, files = "--files" not in words, "--chat" not in words
        numbers = [word for word in words if not word.startswith("--")]
        try:
            if not numbers:
                return await self.listed(session)
            if not numbers[0].isdecimal() or len(numbers) > 1 or not (chat or files):
                raise RewindRefused(f"Usage: /rewind {HINT} (not {argument.strip()[:40]!r}).")
            return (await self.rewind(session, int(numbers[0]), chat=chat, files=files)).summary()
        except RewindRefused as refused:
            return str(refused)

    async def request(self, params: dict[str, Any]) -> dict[str, Any]:
        """`_crow/rewind`: refused while a turn runs; invalid params are -32602."""
        session_id, index = params.get("sessionId"), params.get("messageIndex")
        chat, files = params.get("chat", True), params.get("files", True)
        if not isinstance(session_id, str) or not isinstance(index, int) or isinstance(index, bool):
            raise RequestError.invalid_params({"message": "sessionId (string) and messageIndex (integer) are required"})
        if not isinstance(chat, bool) or not isinstance(files, bool) or not (chat or files):
            raise RequestError.invalid_params({"message": "chat and files are booleans, and one of them is true"})
        if not self.sessions.is_open(session_id):
            raise RequestError.resource_not_found(session_id)
        session = self.sessions.get(session_id)
        if session.control.busy:
            raise RequestError(-32000, BUSY)
        async with session.control.lock:
            try:
                return (await self.rewind(session, index, chat=chat, files=files)).to_json()
            except RewindRefused as refused:
                raise RequestError.invalid_params({"message": str(refused)}) from refused

    async def listed(self, session: Session) -> str:
        entries = prompts(session)
        timeline = self._timeline(session)
        if timeline is None:
            return listing(entries, [None] * len(entries))
        await anyio.to_thread.run_sync(timeline.snapshot)
        now = timeline.last or {}
        changed: list[list[str] | None] = []
        for entry in entries:
            point = timeline.points.get(entry.row_id or 0)
            if point is None or point.before is None:
                changed.append(None)
                continue
            plan = timeline.plan(entry.row_id or 0, now)
            changed.append(sorted(shown(session, c) for c in plan.changes if c.want is None or c.want.kind != "d"))
        return listing(entries, changed)

    async def rewind(self, session: Session, number: int, *, chat: bool, files: bool) -> Outcome:
        """Rewind, the session's lock held by the caller."""
        if self.sessions.pool.pinned:
            raise RewindRefused(GRAPH)
        entries = prompts(session)
        if not 1 <= number <= len(entries):
            raise RewindRefused(f"There is no message {number}: this session has {len(entries)} (see /rewind).")
        row = entries[number - 1].row_id or 0
        outcome = Outcome(number, chat, files)
        timeline = self._timeline(session)
        point = timeline.points.get(row) if timeline else None
        changes: list[Change] = []
        if files and (timeline is None or point is None or point.before is None):
            if not chat:
                raise RewindRefused(f"Message {number} has no file checkpoint: the files cannot be rewound.")
            outcome.files = False
            outcome.note = f"Message {number} has no file checkpoint: the files were left as they are."
        elif files and timeline is not None:
            changes = await self._planned(session, timeline, row, outcome)
        intent = journal.Intent(number, row, new_fork_id() if chat else None, changes)
        directory = self.checkpoints.dir(session.id)
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        journal.write(directory, intent)
        await self._finish(session, intent, timeline, outcome)
        await self.outbox.emit(TitleChanged(session.id, session.title or ""))  # session_info_update: a new state
        return outcome

    async def _planned(self, session: Session, timeline: Timeline, row: int, outcome: Outcome) -> list[Change]:
        await anyio.to_thread.run_sync(timeline.snapshot)
        plan = timeline.plan(row, timeline.last or {})
        outside = [c for c in plan.changes if (c.root, c.path) in plan.outside and c not in plan.not_kept]
        overwrite = bool(outside) and self.options.mode_of(session) == "ask" and session.client is not None
        if overwrite:
            overwrite = await may_overwrite(session, [shown(session, c) for c in outside], self.ask_timeout)
        skipped = set() if overwrite else {id(c) for c in outside}
        outcome.left_alone = sorted(shown(session, c) for c in outside if id(c) in skipped)
        outcome.not_restored = sorted(shown(session, c) for c in plan.not_kept)
        unkept = {id(c) for c in plan.not_kept}
        return [c for c in plan.changes if id(c) not in skipped and id(c) not in unkept]

    async def _finish(
        self, session: Session, intent: journal.Intent, timeline: Timeline | None, outcome: Outcome
    ) -> None:
        """Every step of the journal's intent, each one harmless to do twice; then the journal goes."""
        directory = self.checkpoints.dir(session.id)
        if intent.fork is not None and not intent.chat_done:
            await self._truncate(session, intent.row, intent.fork)
            intent.chat_done = True
            journal.write(directory, intent)
            outcome.fork = intent.fork
        failed = await anyio.to_thread.run_sync(apply, intent.changes, (timeline.objects.read if timeline else _none))
        bad = {id(change) for change, _ in failed}
        outcome.restored = sorted(shown(session, c) for c in intent.changes if id(c) not in bad and _is_file(c))
        outcome.left_alone += sorted(f"{shown(session, c)} ({why})" for c, why in failed)
        if timeline is not None:
            await anyio.to_thread.run_sync(timeline.settle, intent.row if intent.fork else None)
        journal.clear(directory)

    async def _truncate(self, session: Session, row: int, fork: str) -> None:
        """The tail from `row` on copied to `fork` (unless a killed rewind already did), then deleted here."""
        store = self._store()
        await store.flush(session.id)
        stored = await store.load(session.id)
        cut = next((i for i, entry in enumerate(stored) if entry.row_id == row), None)
        if cut is not None:
            if await store.get(fork) is None:
                await copy_session(store, session.id, session.cwd, session.additional_directories, fork_id=fork)
            store.delete_rows(session.id, [e.row_id for e in stored[cut:] if e.row_id is not None])
            await store.flush(session.id)
        index = next((i for i, entry in enumerate(session.history) if entry.row_id == row), len(session.history))
        session.history = session.history[:index]

    # A rewind a kill cut short: finished when the session opens again
    async def recover(self, session: Session) -> bool:
        """Finish a rewind the journal says was under way; whether there was one."""
        directory = self.checkpoints.dir(session.id)
        if (intent := journal.read(directory)) is None:
            return False
        timeline = self._timeline(session)
        outcome = Outcome(intent.message, intent.fork is not None, bool(intent.changes))
        await self._finish(session, intent, timeline, outcome)
        text = (
            f"crow was stopped during a rewind to before message {intent.message}; the rewind is now finished: "
            f"the workspace and the conversation are as they were before message {intent.message}."
        )
        log.warning("session %s: %s", session.id, text)
        shown_instead = ActivityReported(
            session.id, f"rewind-{uuid.uuid4().hex[:8]}", TITLE, "completed", "other", text
        )
        await self.outbox.emit(NoticeRaised(session.id, "warning", TITLE, text, instead=shown_instead))
        return True

    def _timeline(self, session: Session) -> Timeline | None:
        return self.checkpoints.of(session.id, roots_of(session))


def roots_of(session: Session) -> list[str]:
    return [session.cwd, *session.additional_directories]


def shown(session: Session, change: Change) -> str:
    """A path as the user knows it: relative to the cwd, or absolute under another root."""
    return change.path if change.root == session.cwd else f"{change.root.rstrip('/')}/{change.path}"


def new_fork_id() -> str:
    return uuid.uuid4().hex


def _is_file(change: Change) -> bool:
    return change.want is None or change.want.kind != "d"


def _none(_: str) -> bytes:
    raise OSError("no checkpoint")
