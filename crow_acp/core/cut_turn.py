"""A turn that crow's crash or a kill cut off, found on load, and how `/continue` resumes it.

What a cut leaves at the end of the history, once a load has repaired it (acp/sessions/stored.py):
    a user message with no answer        the process died before the model's reply was recorded
    tool results "Interrupted: ..."       it died while the tools ran (the load answered the open calls)
    an assistant draft (cut "streaming")  it died while the reply streamed (core/turn.py)
`/continue` runs a model turn on the history as it is: after a user message or tool results the model
request is already valid; after a draft, a short user message asks the model to go on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from ..history import StoredMessage
from ..plugin.session import SessionAccess, SlashCommand
from .history_rules import NO_RESULT
from .session import INTERRUPTED

CONTINUE = "continue"
"""The slash command's name."""
GO_ON = "Continue where you were cut off."
"""What the model is told after a cut reply (a request may not end with the assistant's message)."""
Resume = Literal["as_is", "go_on"]
_stopping = False


def crow_stops() -> None:
    """crow is shutting down (SIGTERM, SIGHUP, stdin closed: server/shutdown.py): the turns it cancels from
    now on are recorded as cut, not as cancelled by the user, so a load marks them and /continue resumes."""
    global _stopping
    _stopping = True


def crow_stopping() -> bool:
    return _stopping


def cut_off(history: Sequence[StoredMessage]) -> str | None:
    """How the last turn was cut off by crow stopping, for the user; None when it ended."""
    last = history[-1] if history else None
    if last is None:
        return None
    role = last.message.get("role")
    if role == "user" and last.meta.kind == "prompt":
        return "your last message has no answer"
    if role == "tool" and last.message.get("content") in (INTERRUPTED, NO_RESULT):
        return "a tool call was interrupted"
    if role == "assistant" and last.meta.cut == "streaming":
        return "the reply was cut off while it streamed"
    return None


def resumption(history: Sequence[StoredMessage]) -> Resume | None:
    """How `/continue` resumes: on the history as it is, after a short "go on", or not at all (it ended).
    A turn the user cancelled (its tool results say so) resumes as a cut one does."""
    last = history[-1] if history else None
    if last is None:
        return None
    role = last.message.get("role")
    if role == "tool" or (role == "user" and last.meta.kind == "prompt"):
        return "as_is"
    if role == "assistant" and last.meta.cut == "streaming":
        return "go_on"
    return None


def continue_command() -> SlashCommand:
    """`/continue`, offered in every session. The turn runner resumes a cut turn itself (acp/prompt/turn.py);
    the handler runs only when there is nothing to resume."""
    return SlashCommand(CONTINUE, "Resume the last turn, if crow stopped before it finished", _nothing_to_resume)


async def _nothing_to_resume(session: SessionAccess, argument: str) -> str:
    return "Nothing to continue: the last turn finished."
