"""What a session's editor is told once session/new or session/load has been answered: the events held
back meanwhile, its cost so far, MCP servers that failed, config warnings, the commands, the sandbox's
state; and the model client warmed up while the user types (SessionOpener.after_response)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...model.costs import shown_on_load
from ...model.wires import prewarm
from ...util.imports import off_loop
from ..prompt.mcp import all_commands, report_failures
from ..updates.shapes import commands_update
from ..updates.warnings import config_warnings, sandbox_warning

if TYPE_CHECKING:
    from ...config import Config
    from ..prompt.turn import Spawn
    from ..updates.editor_link import EditorLink
    from ..updates.outbox import Outbox
    from .registry import OpenSessions


class Announcer:
    def __init__(
        self, config: Config, sessions: OpenSessions, outbox: Outbox, editor: EditorLink, spawn: Spawn
    ) -> None:
        self.config = config
        self.sessions = sessions
        self.outbox = outbox
        self.editor = editor
        self._spawn = spawn
        self._prewarmed = False

    def after_response(self, session_id: str) -> None:
        """Runs once the session/new or session/load response has gone out (the SDK orders it so)."""
        self._spawn(self._announce(session_id))
        if not self._prewarmed and (session := self.sessions.by_id.get(session_id)):
            self._prewarmed = True
            self._spawn(off_loop(prewarm, session.model))  # while the user types

    async def _announce(self, session_id: str) -> None:
        held = self.outbox.stop_holding(session_id)
        session = self.sessions.by_id.get(session_id)
        if session is None:
            return
        for event in held:
            await self.outbox.emit(event)
        if (usage := shown_on_load(session)) is not None:  # its cost, as the editor showed it before
            await self.outbox.emit(usage)
        await report_failures(session)
        for notice in config_warnings(session_id, self.config.warnings()):
            await self.outbox.emit(notice)
        if self.editor.conn and (commands := all_commands(session)):
            try:
                await self.editor.conn.session_update(session_id=session_id, update=commands_update(commands))
            except ConnectionError:  # the editor left right after its answer: nobody to tell
                pass
        # Last: the probe may take a while on a busy machine, and nothing above should wait for it.
        for notice in await sandbox_warning(session_id, self.config.sandbox, self.editor):
            await self.outbox.emit(notice)
