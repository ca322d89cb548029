"""Stored sessions as the editor asks about them: listed (session/list), copied (session/fork), and repaired
on load (invalid Unicode written back; tool calls a killed process left open answered).

A fork starts with a copy of another's stored history: every row is copied (archived ones too, so the
fork replays what the original showed), in one transaction; from then on the two share nothing.
"""

from __future__ import annotations

import copy
import time
import uuid

from acp import RequestError
from acp.schema import SessionInfo

from ...core.history_rules import repair_entries
from ...core.session import INTERRUPTED, Session, answer_open_calls
from ...history import StoredMessage
from ...store import Caller, SessionRecord, SessionStore
from ...util.text import clean_meta, clean_text, repair


async def copy_session(
    store: SessionStore, source_id: str, cwd: str, directories: list[str] | None, fork_id: str | None = None
) -> str:
    """Copy the record and rows to a new session of the same owner (`fork_id`, else a new id); returns its id."""
    source = await store.get(source_id)
    if source is None:
        raise RequestError.resource_not_found(source_id)
    fork_id, now = fork_id or uuid.uuid4().hex, time.time()
    data = copy.deepcopy(source.data)
    data["forked_from"] = source_id
    if directories is not None:
        data["additional_directories"] = directories
    title = f"{source.title} (fork)" if source.title else None
    rows = [
        StoredMessage(e.message, copy.deepcopy(e.meta), e.active, row_id=e.row_id) for e in await store.load(source_id)
    ]
    # One transaction: all rows or none. The fork is the source owner's (ownership.py says who else may use it).
    store.create(SessionRecord(fork_id, cwd, title, now, now, data, source.owner), rows)
    return fork_id


async def listed(store: SessionStore, cwd: str | None, agent: str, caller: Caller) -> list[SessionInfo]:
    """The stored sessions of `agent` that `caller` may see (in `cwd`, if given), as session/list shows them."""
    return [
        SessionInfo(
            session_id=r.id,
            cwd=r.cwd,
            title=r.title,
            updated_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(r.updated_at)),
        )
        for r in await store.list_sessions(cwd, visible_to=caller)
        if r.data.get("agent", agent) == agent
    ]


def repair_history(session: Session, entries: list[StoredMessage]) -> None:
    """Answer tool calls a killed process left open, so the history is valid for the model again."""
    session.history = list(entries)
    answer_open_calls(session, INTERRUPTED)
    session.history = repair_entries(session.history)  # damaged rows (orphans, bad ids or arguments) stay as stored


def repair_stored(store: SessionStore, record: SessionRecord, entries: list[StoredMessage]) -> list[StoredMessage]:
    """A stored session's rows with valid Unicode, written back where they needed it (on load)."""
    for entry in entries:
        if repair(entry.message) and entry.row_id is not None:
            store.update_message(record.id, entry.row_id, message=entry.message)
        if (meta := clean_meta(entry.meta)) is not entry.meta:
            entry.meta = meta
            if entry.row_id is not None:
                store.update_message(record.id, entry.row_id, extra=meta.to_json())
    title = clean_text(record.title) if record.title else record.title
    if repair(record.data) or title != record.title:
        store.update(record.id, title=title, data=record.data)
    return entries
