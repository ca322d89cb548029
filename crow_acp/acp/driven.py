"""What Python (a MultiAgent, a bridge, an observer) drives an AcpAgent's open sessions with, without an
editor's requests. Each method raises RequestError.resource_not_found for a session not open here.

A base of AcpAgent (agent.py keeps the ACP handlers): it works on the collaborators the agent owns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.session_view import SessionView
from .sessions.options import MODE_OPTION

if TYPE_CHECKING:
    from ..policy.modes import Mode
    from .prompt.turn import TurnRunner
    from .sessions.options import SessionOptions
    from .sessions.registry import OpenSessions, SharedBoard


class DrivenFromPython:
    open_sessions: OpenSessions
    options: SessionOptions
    turns: TurnRunner

    def is_open(self, session_id: str) -> bool:
        """Whether the session is in memory here (created, loaded or resumed, and not closed)."""
        return self.open_sessions.is_open(session_id)

    def access(self, session_id: str) -> SessionView:
        """The view a callback gets of the session: messages, context, side prompts, reports."""
        return SessionView(self.open_sessions.get(session_id))

    def in_turn(self, session_id: str) -> bool:
        """Whether a prompt (a turn or a slash command) is running in the session right now."""
        return self.open_sessions.in_turn(session_id)

    def offers_command(self, session_id: str, text: str) -> bool:
        """Whether `text` is one of the session's slash commands, which run instead of a turn."""
        return self.open_sessions.offers_command(session_id, text)

    def record_prompt(self, session_id: str, blocks: list[dict[str, Any]]) -> None:
        """Record a user prompt without running a turn (a pattern giving the user's text to no agent)."""
        self.open_sessions.record_prompt(session_id, blocks)

    def mark_handoff(self, session_id: str, since: int, source: str | None) -> None:
        """Tag the first prompt after `since` entries as `source`'s hand-off (load replays it as one)."""
        self.open_sessions.mark_handoff(session_id, since, source)

    def save_session(self, session_id: str) -> None:
        """Write the session's data (context included) to the store now."""
        self.open_sessions.get(session_id).save()

    async def flush_session(self, session_id: str) -> None:
        """Make the session's writes so far durable (a write another member made to a shared blackboard)."""
        await self.open_sessions.flush(session_id)

    def join_blackboard(self, session_id: str, board: SharedBoard) -> None:
        """Make the session's context a member of `board`: its shared keys become the board's."""
        self.open_sessions.join_blackboard(session_id, board)

    async def title_session(self, session_id: str, text: str) -> None:
        """Name the session after `text` unless it has one, then let the model write a better one (as after a turn)."""
        await self.turns.name(self.open_sessions.get(session_id), text)

    def keep_sessions_open(self) -> None:
        """Never evict this agent's sessions (a MultiAgent's run reaches into them between prompts)."""
        self.open_sessions.pool.pinned = True

    def mode_of(self, session_id: str) -> Mode:
        """The session's permission mode."""
        return self.options.mode_of(self.open_sessions.get(session_id))

    def set_mode(self, session_id: str, mode: Mode) -> None:
        """Set the session's mode without telling the editor (a MultiAgent's other members follow the entry)."""
        self.options.apply(self.open_sessions.get(session_id), MODE_OPTION, mode)
