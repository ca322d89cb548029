"""`crow check`'s agents section: each [agents.NAME] member, broken when its program is not installed or
the variable holding its token is not set (a graph or a delegate would fail on it mid-turn)."""

from __future__ import annotations

import os
import shutil
from typing import Any

from crow.check_report import Report


def agents_section(report: Report, config: Any) -> None:
    from crow_acp.config import resolve_command

    report.section("agents")
    if not config.agents:
        report.item("none", "configured")
    for name, agent in config.agents.items():
        if agent.url is not None:
            if agent.token_env and not os.environ.get(agent.token_env):
                report.bad(f"{name}: {agent.token_env} (its token) is not set ({agent.url})")
            else:
                report.ok(f"{name}: {agent.url} (remote, not contacted)")
            continue
        program = resolve_command(agent.command[0])
        found = program if os.sep in program and os.access(program, os.X_OK) else shutil.which(program)
        if found is None:
            report.bad(f"{name}: {agent.command[0]!r} is not installed (not on PATH, nor next to crow's Python)")
        else:
            report.ok(f"{name}: {' '.join([found, *agent.command[1:]])}")
