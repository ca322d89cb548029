"""Imports off the event loop, one at a time.

crow imports its heavy packages in worker threads so the event loop keeps answering: the model
client after the first session, each MCP transport as its server connects, the default agent after
`initialize`. Threads importing overlapping packages at once can meet in importlib's deadlock
detection, which hands one of them a partially initialized module and an ImportError. So the
background imports take turns behind one lock.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_TURN = threading.Lock()


def _in_turn(work: Callable[..., T], *args: Any) -> T:
    with _TURN:
        return work(*args)


async def off_loop(work: Callable[..., T], *args: Any) -> T:
    """Run `work(*args)` (which imports) in a thread, after any other background import."""
    return await asyncio.to_thread(_in_turn, work, *args)
