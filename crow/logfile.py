"""Logging for the terminal commands: to crow.log only, since the screen belongs to the output."""

from __future__ import annotations

import logging
import os
from pathlib import Path


def log_hint() -> str:
    """Where crow.log is, as a user would type it."""
    home = os.environ.get("CROW_HOME") or "~/.crow"
    return f"{home}/logs/crow.log"


def log_to_file(log_dir: Path, *, verbose: bool = False) -> None:
    """Route crow's own logs (and asyncio's, and libraries') to $CROW_HOME/logs/crow.log."""
    root = logging.getLogger()
    root.handlers[:] = []
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    try:
        from crow_acp.config.private import PrivateLog

        handler: logging.Handler = PrivateLog(log_dir)  # 0600 in a 0700 directory, as crow acp's
    except OSError:
        handler = logging.NullHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    logging.getLogger("httpx2").setLevel(logging.WARNING)
