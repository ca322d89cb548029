"""`--mode`: the session's permission mode for one run, put back when the run ends.

The mode is the session's own state (an editor's mode picker sets it too), so a run that changed it
sets the previous mode again on its way out, Ctrl-C included: a later `crow run --continue` without
--mode is not left in full access by an earlier one. (A run killed by SIGKILL cannot put it back.)
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from acp import RequestError
from acp.schema import SessionModeState

from crow.exits import FAILED, USAGE, Exit
from crow_acp.server.hosted import AgentGone, HostedAgent

RESTORE_TIMEOUT = 5.0


@asynccontextmanager
async def run_mode(
    served: HostedAgent, conn: Any, sid: str, modes: SessionModeState | None, mode: str | None
) -> AsyncIterator[None]:
    if mode is None or (modes is not None and modes.current_mode_id == mode):
        yield
        return
    if modes is None or mode not in (offered := [m.id for m in modes.available_modes]):
        raise Exit(USAGE, f"--mode {mode}: this agent offers {', '.join(offered) if modes else 'no modes'}")
    await _set(served, conn, sid, mode)
    try:
        yield
    finally:
        await asyncio.shield(_put_back(served, conn, sid, modes.current_mode_id))


async def _set(served: HostedAgent, conn: Any, sid: str, mode: str) -> None:
    try:
        await served.call(conn.set_session_mode(session_id=sid, mode_id=mode))
    except RequestError as exc:
        raise Exit(FAILED, f"cannot set mode {mode}: {exc}") from None


async def _put_back(served: HostedAgent, conn: Any, sid: str, mode: str) -> None:
    try:
        await asyncio.wait_for(served.call(conn.set_session_mode(session_id=sid, mode_id=mode)), RESTORE_TIMEOUT)
    except (TimeoutError, ConnectionError, RequestError, AgentGone):
        pass  # the agent is going away: its session keeps the run's mode
