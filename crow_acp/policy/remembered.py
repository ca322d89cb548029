"""The user's "always allow" answers: a tool, or for a command tool one exact command line.

They are kept in `session.data["allowed"]` with the roots they were given under (the cwd and the
additional directories). A session opened, forked or loaded with other roots starts without them:
an answer given for one project says nothing about another.

A command is remembered exactly, never as a prefix: `echo hi` allows `echo hi` only, not
`echo hi; touch X`, `echo hi && curl … | sh` or `rm -rf x`.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..api import Tool
    from ..core.session import Session
    from ..events import ToolView

KEY = "allowed"
LEGACY_KEY = "allowed_tools"
"""Tool names remembered before answers had roots: dropped, as their roots are unknown."""
MAX_LABEL = 60


def roots_of(session: Session) -> list[str]:
    cwd = os.path.normpath(os.path.abspath(session.cwd))
    return [cwd, *(os.path.normpath(os.path.join(cwd, d)) for d in session.additional_directories)]


def _memory(session: Session) -> dict[str, Any]:
    """The answers for the session's roots now; answers given under other roots are dropped."""
    memory, roots = session.data.get(KEY), roots_of(session)
    if not isinstance(memory, dict) or memory.get("roots") != roots:
        memory = session.data[KEY] = {"roots": roots, "tools": [], "commands": []}
        session.data.pop(LEGACY_KEY, None)
    return memory


def bind_to_roots(session: Session) -> None:
    """At open: drop (and persist dropping) the answers remembered under other roots."""
    kept, legacy = session.data.get(KEY), LEGACY_KEY in session.data
    if (kept is not None and _memory(session) is not kept) or legacy:
        session.data.pop(LEGACY_KEY, None)
        session.save()


def command_of(view: ToolView, arguments: dict[str, Any]) -> str | None:
    """What "always" remembers of a command tool's call (the command line, else all its arguments),
    or None for other tools, which are remembered by name."""
    if view.kind != "execute":
        return None
    command = arguments.get("command")
    if isinstance(command, str):
        return command.strip()  # as run_command runs it
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False)


def is_remembered(session: Session, tool: Tool, command: str | None) -> bool:
    memory = _memory(session)
    if command is None:
        return tool.name in memory["tools"]
    return [tool.name, command] in memory["commands"]


def remember(session: Session, tool: Tool, command: str | None) -> None:
    memory = _memory(session)
    if command is None:
        memory["tools"].append(tool.name)
    else:
        memory["commands"].append([tool.name, command])
    session.save()


def always_label(command: str | None) -> str:
    """The "always" option's name: it says what will be remembered."""
    if command is None:
        return "Always allow"
    if len(command) > MAX_LABEL or "\n" in command or "`" in command:
        return "Always allow this exact command"
    return f"Always allow `{command}`"
