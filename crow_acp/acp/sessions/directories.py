"""The directories an editor names in session/new, load, resume and fork: checked before any work.

Each must be a non-empty absolute path without NUL. The `cwd` must also be a directory that exists
now: a session rooted in a missing directory would run its commands, MCP servers and file tools
against nothing, so the editor hears at once which path is wrong (-32602, the path in `data`).
A session evicted for room and reopened by a prompt keeps its cwd unchecked (`check_directories`):
the user did not ask for it, and its turn reports a missing directory like any other tool failure.
"""

from __future__ import annotations

import os
from typing import Any

from acp import RequestError


def check_directories(cwd: Any, additional: Any = None) -> None:
    """Each directory a non-empty absolute path without NUL; RequestError.invalid_params naming it otherwise."""
    for name, value in [("cwd", cwd), *(("additionalDirectories", d) for d in additional or ())]:
        if not isinstance(value, str) or not value or "\0" in value or not value.startswith("/"):
            raise RequestError.invalid_params({name: value, "reason": "must be a non-empty absolute path without NUL"})


def check_editor_directories(cwd: Any, additional: Any = None) -> None:
    """What the editor asks a session to run in: well formed (above), and its cwd an existing directory."""
    check_directories(cwd, additional)
    if not os.path.isdir(cwd):
        reason = "is not a directory" if os.path.exists(cwd) else "does not exist"
        raise RequestError.invalid_params({"cwd": cwd, "reason": reason})
