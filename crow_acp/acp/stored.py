"""Stored sessions as the editor asks about them: listed (session/list) and copied (session/fork).

A fork starts with a copy of another's stored history: every row is copied (archived ones too, so the
fork replays what the original showed), in one transaction; from then on the two share nothing.
"""

from __future__ import annotations

import copy
import time
import uuid

from acp import RequestError
from acp.schema import SessionInfo

from ..history import StoredMessage
from ..store import SessionRecord, SessionStore


async def copy_session(store: SessionStore, source_id: str, cwd: str, directories: list[str] | None) -> str:
    """Copy the session's record and rows to a new session; returns the new id."""
    source = await store.get(source_id)
    if source is None:
        raise RequestError.resource_not_found(source_id)
    fork_id, now = uuid.uuid4().hex, time.time()
    data = copy.deepcopy(source.data)
    data["forked_from"] = source_id
    if directories is not None:
        data["additional_directories"] = directories
    title = f"{source.title} (fork)" if source.title else None
    rows = [
        StoredMessage(e.message, copy.deepcopy(e.meta), e.active, row_id=e.row_id) for e in await store.load(source_id)
    ]
    store.create(SessionRecord(fork_id, cwd, title, now, now, data), rows)  # one transaction: all rows or none
    return fork_id


async def listed(store: SessionStore, cwd: str | None, agent: str) -> list[SessionInfo]:
    """The stored sessions of `agent` (in `cwd`, if given), as session/list shows them."""
    return [
        SessionInfo(
            session_id=r.id,
            cwd=r.cwd,
            title=r.title,
            updated_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(r.updated_at)),
        )
        for r in await store.list_sessions(cwd)
        if r.data.get("agent", agent) == agent
    ]
