"""Crow's own warnings about a session, as notices (ACP 1.25): for the user, never for the history.

Each helper builds a NoticeRaised; AcpUpdates sends it as a `notice` to a client that opted in, and
its `instead` (the view crow gave before notices, if any) to any other. The MCP servers' reports
are in prompt/mcp.py, a lost lease's in leases.py's caller, a model request's retries in model/retries.py.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING

from ...errors import ModelError
from ...events import NoticeRaised, TextDelta

if TYPE_CHECKING:
    from ...config import SandboxConfig
    from .editor_link import EditorLink

MODEL_ERROR = "The model request failed"
TAKEN_OVER = "Another process took over this session"
CONFIG_WARNING = "Configuration warning"


def model_error(session_id: str, error: BaseException | None) -> NoticeRaised | None:
    """The model's final error as a notice (the prompt's JSON-RPC error says it too, as before)."""
    if not isinstance(error, ModelError):
        return None
    return NoticeRaised(session_id, "error", MODEL_ERROR, str(error))


def config_warnings(session_id: str, warnings: list[str]) -> list[NoticeRaised]:
    """What `crow check` and `crow run` warn about the configuration; an editor had only the log."""
    return [NoticeRaised(session_id, "warning", CONFIG_WARNING, warning) for warning in warnings]


async def sandbox_warning(session_id: str, config: SandboxConfig, editor: EditorLink) -> list[NoticeRaised]:
    """Once per editor connection: commands cannot run sandboxed on crow's machine (an editor whose terminals
    run the commands is told when one fails to start there, editor/terminal.py). The probe blocks: off the loop."""
    caps = editor.capabilities
    if editor.sandbox_told or (caps is not None and caps.terminal):
        return []
    editor.sandbox_told = True
    from ...policy.sandboxing import unavailable_notice

    if (told := await asyncio.to_thread(unavailable_notice, config)) is None:
        return []
    return [NoticeRaised(session_id, "warning", told.title, told.description)]


def taken_over(session_id: str, description: str) -> NoticeRaised:
    return NoticeRaised(session_id, "error", TAKEN_OVER, description)


def cut_mark(session_id: str, how: str) -> TextDelta:
    """After a load, the turn crow's stop cut off (core/cut_turn.py), as a message every client shows (not stored)."""
    text = f"The last turn was cut off: {how} (crow stopped before it finished). Send /continue to resume it."
    return TextDelta(session_id, uuid.uuid4().hex, text)
