"""A prompt's file checkpoints: the workspace kept before the turn runs and after it ends (timeline/).

Taken on a worker thread while the session's lock is held, so no other prompt of the session runs
meanwhile; a checkpoint that fails (a root gone, too many files) is logged and the turn runs anyway.
"""

from __future__ import annotations

import logging

import anyio

from ...core.session import Session
from ...timeline.timeline import Checkpoints

log = logging.getLogger(__name__)


async def before_prompt(checkpoints: Checkpoints | None, session: Session, row: int | None) -> None:
    await _take(checkpoints, session, row, before=True)


async def after_prompt(checkpoints: Checkpoints | None, session: Session, row: int | None) -> None:
    with anyio.CancelScope(shield=True):  # also after a cancel: what the turn left is crow's
        await _take(checkpoints, session, row, before=False)


async def _take(checkpoints: Checkpoints | None, session: Session, row: int | None, *, before: bool) -> None:
    if checkpoints is None or row is None:
        return
    timeline = checkpoints.of(session.id, [session.cwd, *session.additional_directories])
    if timeline is None:
        return
    try:
        await anyio.to_thread.run_sync(timeline.before if before else timeline.after, row)
    except OSError as exc:  # $CROW_HOME full or unwritable: the turn still runs, without a checkpoint
        log.warning("checkpoint of session %s failed: %s", session.id, exc)
