"""Notices and compactions as the editor sees them (schema 1.25).

A client that opted in (`session.notices`, `session.compaction`) gets `notice`, `compaction_update`
and `compaction_summary_chunk` updates; any other keeps the view it had before: a notice's
`instead` report, and a compaction as a tool call. A load replays each compaction where it
happened, from its summary entry in the history (the entry the model reads, so no marker of its
own is stored).
"""

from __future__ import annotations

from typing import Any

from acp import start_tool_call, text_block

from ...events import ActivityReported, CompactionReported, NoticeRaised
from ...history import StoredMessage
from ..rpc.shapes import ClientFeatures
from ..rpc.shapes.updates import CompactionSummaryChunk, CompactionUpdate, Notice

COMPACTED_MARKER = "Context compacted"
"""The replayed tool call of a compaction, for clients without compaction updates."""


def notice(event: NoticeRaised) -> Notice:
    return Notice(
        session_update="notice", severity=event.severity, title=event.title or "Notice", description=event.description
    )


def compaction_updates(event: CompactionReported) -> list[Any]:
    """The summary (with `completed`) as one chunk, then the status."""
    updates: list[Any] = []
    if event.summary:
        updates.append(
            CompactionSummaryChunk(
                session_update="compaction_summary_chunk",
                compaction_id=event.compaction_id,
                content=text_block(event.summary),
            )
        )
    error = event.text if event.status == "failed" else None
    updates.append(
        CompactionUpdate(
            session_update="compaction_update", compaction_id=event.compaction_id, status=event.status, error=error
        )
    )
    return updates


def compaction_activity(event: CompactionReported) -> ActivityReported:
    """The compaction as a tool call, as every client saw it before compaction updates."""
    status = "failed" if event.status == "cancelled" else event.status
    return ActivityReported(event.session_id, event.compaction_id, event.title, status, "other", event.text)


def replayed_compaction(entry: StoredMessage, summary: str, features: ClientFeatures) -> Any:
    """A compaction's summary entry, replayed where it happened."""
    compaction_id = entry.meta.message_id or f"compaction-{entry.row_id}"
    if not features.compaction:
        return start_tool_call(f"compaction-{entry.row_id}", COMPACTED_MARKER, kind="other", status="completed")
    return CompactionUpdate(
        session_update="compaction_update",
        compaction_id=compaction_id,
        status="completed",
        summary=[text_block(summary)],
    )
