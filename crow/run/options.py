"""What one `crow run` or `crow chat` was asked to do, as the command line said it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(kw_only=True)
class HostOptions:
    """What hosting the agent in this process needs, for a one-shot run and a conversation alike."""

    cwd: str
    log_dir: Path
    session: str | None = None
    """--session: a stored session to continue, by id or unique prefix (resolved before the agent starts)."""
    continue_last: bool = False
    """--continue: the latest session of `cwd`."""
    mode: str | None = None
    """--mode: the session's permission mode for this run, put back when it ends."""
    verbose: bool = False
    agent: str | None = None
    """--agent: the agent to host instead of the default one."""
    config: Any = None
    """The loaded configuration (crow_acp.config.Config), --model applied."""
    log_format: str | None = None
    """--log-format: text or json (None: CROW_LOG_FORMAT, else the config's)."""
    warnings: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class RunOptions(HostOptions):
    prompt: str
    approve: bool = False
    format: str = "text"
    raw: bool = False
    """In a pipe or file, the answer keeps its control characters (escape sequences); a terminal never gets them."""
