"""One prompt through the hosted agent (crow/run/link.py): open or load the session, prompt, and turn the
outcome into an exit status."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from crow.exits import FAILED, OK, STOPPED
from crow.run.client import TerminalClient
from crow.run.link import linked
from crow.run.modes import run_mode
from crow.run.options import HostOptions, RunOptions
from crow.run.view import View


async def drive(options: RunOptions, view: View, agent: Any) -> int:
    await show_warnings(options, view)
    async with linked(agent, TerminalClient(view), "crow-run") as link:
        if options.session:
            await link.load_session(options.cwd, options.session)  # the history was seen already
            sid = options.session
        else:
            sid = await link.new_session(options.cwd)
        async with run_mode(link.served, link.conn, sid, link.modes.get(sid), options.mode):
            turn = await link.prompt(sid, options.prompt)
        if turn.error is not None:
            view.error(turn.error, sid)
            return FAILED
        stop_reason = turn.stop_reason or "end_turn"
        view.stop(stop_reason, sid)
        return OK if stop_reason in ("end_turn", "max_tokens") else STOPPED


async def show_warnings(options: HostOptions, view: View) -> None:
    for warning in options.warnings + (
        skill_warnings(options.config.home, options.cwd) if options.agent is None else []
    ):
        view.warning(warning)
    if options.agent is None:
        from crow_acp.policy.sandboxing import unavailable_notice

        if notice := await asyncio.to_thread(unavailable_notice, options.config.sandbox):
            view.warning(notice.line())  # once, with the fix; the commands then ask


def skill_warnings(home: Path, cwd: str) -> list[str]:
    """Broken skills, once, before the run: the agent skips them (its log says so, in crow.log since logging
    is set up: scanned before that, Python would print the log line on stderr as well)."""
    from crow_skills.discover import discover, search_dirs

    return [f"skill skipped: {warning}" for warning in discover(search_dirs(Path(cwd), home=home)).warnings]
