"""The public methods that drive an AcpAgent's open sessions from Python, without an editor's requests.

A MultiAgent, a bridge and an observer use these (and only these) instead of reaching into a
session: each takes a session id and raises `RequestError.resource_not_found` when that session
is not open in this agent. AcpAgent inherits them; they live here so agent.py stays the ACP handlers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from acp import RequestError

from ..core.session import Session
from ..core.session_access import SessionView
from ..history import EntryMeta, Handoff
from ..util.secrets import redact, redact_json
from .prompt_blocks import split_command, to_model_text

if TYPE_CHECKING:
    from .leases import Leases



class SharedBoard(Protocol):
    """A graph's shared context (multi.blackboard.Blackboard), which a member session's context joins."""

    def join(self, context: Mapping[str, Any], save: Callable[[], None]) -> dict[str, Any]: ...


class SessionControl:
    sessions: dict[str, Session]
    leases: Leases

    def _session(self, session_id: str) -> Session:
        if session_id not in self.sessions:
            raise RequestError.resource_not_found(session_id)
        return self.sessions[session_id]

    def is_open(self, session_id: str) -> bool:
        """Whether the session is in memory here (created, loaded or resumed, and not closed)."""
        return session_id in self.sessions

    def access(self, session_id: str) -> SessionView:
        """The view a callback gets of the session: messages, context, side prompts, reports."""
        return SessionView(self._session(session_id))

    def in_turn(self, session_id: str) -> bool:
        """Whether a prompt (a turn or a slash command) is running in the session right now."""
        return self._session(session_id).lock.locked()

    def offers_command(self, session_id: str, text: str) -> bool:
        """Whether `text` is one of the session's slash commands, which run instead of a turn."""
        return split_command(text)[0] in self._session(session_id).commands

    def record_prompt(self, session_id: str, blocks: list[dict[str, Any]]) -> None:
        """Record a user prompt without running a turn (a pattern that gives the user's text to no agent)."""
        content = redact(to_model_text(blocks))  # no key reaches the store, even one the user pasted
        self._session(session_id).record({"role": "user", "content": content}, EntryMeta("prompt", blocks=redact_json(blocks)))

    def mark_handoff(self, session_id: str, since: int, source: str | None) -> None:
        """Tag the first prompt recorded after the first `since` entries as handed over by `source`,
        so session/load replays it as the hand-off, not as the user speaking."""
        session = self._session(session_id)
        for entry in session.history[since:]:
            if entry.message["role"] == "user" and entry.meta.kind == "prompt":
                session.update_meta(entry, replace(entry.meta, handoff=Handoff(source)))
                return

    def save_session(self, session_id: str) -> None:
        """Write the session's data (context included) to the store now."""
        self._session(session_id).save()

    async def flush_session(self, session_id: str) -> None:
        """Make the session's writes so far durable (a write another member made to a shared blackboard)."""
        if session_id in self.sessions:
            await self.leases.flushed(session_id)

    def join_blackboard(self, session_id: str, board: SharedBoard) -> None:
        """Make the session's context a member of `board`: its shared keys become the board's."""
        session = self._session(session_id)
        session.data["context"] = board.join(session.context, self._saver(session_id))
        session.save()

    def _saver(self, session_id: str) -> Callable[[], None]:
        def save() -> None:
            if (session := self.sessions.get(session_id)) is not None:  # closed sessions were saved when closed
                session.save()

        return save
