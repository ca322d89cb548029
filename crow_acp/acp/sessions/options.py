"""A session's config options for the editor, in one list: model, mode (and more as they come).

Each option is a small object with `build(session)` (the ACP options it offers now, with their
current values: none when it does not apply) and `apply(session, value)` (validate, set, persist).
To add one, write such a class and add it to `SessionOptions.options`; the agent's handlers need
no change.
The mode option is also offered through the older mode API (`modes` in session responses,
session/set_mode, current_mode_update), for clients that know only that one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from acp import RequestError
from acp.schema import (
    ConfigOptionUpdate,
    CurrentModeUpdate,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
)

from ...api import SlashCommand
from ...policy.modes import MODE_IDS, MODES, Mode, allowed_modes, capped, current_mode, set_mode, within
from ..prompt import thinking

if TYPE_CHECKING:
    from ...config import Config
    from ...core.session import Session
    from ...core.session_view import SessionView
    from ...model.profiles import Models
    from ..updates.editor_link import EditorLink
    from .registry import OpenSessions

MODE_OPTION = "mode"
MODE_HINT = " | ".join(MODE_IDS)
"""Every mode, from the one list (policy/modes.py): the hint the editor shows after `/mode`."""


class SessionOption(Protocol):
    id: str

    def build(self, session: Session) -> list[Any]: ...

    def apply(self, session: Session, value: Any) -> None:
        """Set the value for this session and persist it; RequestError.invalid_params if it is not one."""


class ModelOption:
    """Zed's model picker: switch this session to another [models] profile (remembered)."""

    id = "model"

    def __init__(self, models: Models) -> None:
        self.models = models

    def build(self, session: Session) -> list[Any]:
        return [self.models.option(session.data.get("model"))]

    def apply(self, session: Session, value: Any) -> None:
        if value not in self.models.names():
            raise RequestError.invalid_params({"configId": self.id, "value": value, "allowed": self.models.names()})
        session.model = self.models.client(value)
        session.data["model"] = value
        session.save()


class ModeOption:
    """The permission mode (modes.py), category "mode" so editors show it in their mode picker."""

    id = MODE_OPTION

    def __init__(self, default: Mode, cap: Mode = "full_access") -> None:
        self.default, self.cap = capped(default, cap), cap

    def current(self, session: Session) -> Mode:
        """The session's mode as it holds ([permissions] max_mode caps a stored one too)."""
        return capped(current_mode(session, self.default), self.cap)

    def build(self, session: Session) -> list[Any]:
        choices = [
            SessionConfigSelectOption(value=m.id, name=m.name, description=m.description)
            for m in MODES
            if within(m.id, self.cap)
        ]
        current = self.current(session)
        return [
            SessionConfigOptionSelect(
                type="select", id=self.id, name="Mode", category="mode", current_value=current, options=choices
            )
        ]

    def apply(self, session: Session, value: Any) -> None:
        if value not in MODE_IDS:
            raise RequestError.invalid_params({"configId": self.id, "value": value, "allowed": list(MODE_IDS)})
        if not within(value, self.cap):
            raise RequestError.invalid_params(
                {"configId": self.id, "value": value, "allowed": allowed_modes(self.cap), "reason": self.above(value)}
            )
        set_mode(session, value)

    def above(self, value: str) -> str:
        return f"mode {value!r} is above this server's cap, {self.cap!r} (crow serve --max-mode)"

    def state(self, session: Session) -> SessionModeState:
        """The same modes for the older API."""
        modes = [SessionMode(id=m.id, name=m.name, description=m.description) for m in MODES if within(m.id, self.cap)]
        return SessionModeState(current_mode_id=self.current(session), available_modes=modes)


class ThinkingOption:
    """The thinking level for reasoning profiles (thinking.py)."""

    id = thinking.OPTION_ID

    def build(self, session: Session) -> list[Any]:
        return list(thinking.options(session))

    def apply(self, session: Session, value: Any) -> None:
        thinking.choose(session, value)


class SessionOptions:
    """Every config option a session offers, in the order the editor shows them; changes acknowledged."""

    def __init__(self, models: Models, config: Config, sessions: OpenSessions, editor: EditorLink) -> None:
        self.mode = ModeOption(config.permissions.default_mode, config.permissions.max_mode)
        self.options: list[SessionOption] = [ModelOption(models), self.mode, ThinkingOption()]
        self._sessions = sessions
        self._editor = editor

    def build(self, session: Session) -> list[Any]:
        return [built for option in self.options for built in option.build(session)]

    def apply(self, session: Session, config_id: str, value: Any) -> None:
        option = next((o for o in self.options if o.id == config_id), None)
        if option is None:
            raise RequestError.invalid_params({"configId": config_id, "known": [o.id for o in self.options]})
        option.apply(session, value)

    def mode_of(self, session: Session) -> Mode:
        return self.mode.current(session)

    async def changed(self, session_id: str, *, mode: bool) -> None:
        """Tell the editor the session's options now (and its mode, for clients of the older API)."""
        if self._editor.conn and (session := self._sessions.by_id.get(session_id)):
            for update in options_updates(self.build(session), self.mode.state(session) if mode else None):
                await self._editor.conn.session_update(session_id=session_id, update=update)

    def mode_command(self) -> SlashCommand:
        """`/mode [MODE]`: show or switch this session's permission mode."""
        return SlashCommand("mode", "Show or switch the permission mode", self._mode_command, hint=MODE_HINT)

    async def _mode_command(self, access: SessionView, argument: str) -> str:
        session = self._sessions.get(access.session_id)
        wanted = argument.strip().lower().replace(" ", "_").replace("-", "_")
        listing = ", ".join(f"{m.id} ({m.name})" for m in MODES)
        if not wanted:
            return f"Mode: {self.mode_of(session)}. Modes: {listing}."
        if wanted not in MODE_IDS:
            return f"Unknown mode {argument.strip()!r}. Modes: {listing}."
        if not within(wanted, self.mode.cap):
            return f"Not switched: {self.mode.above(wanted)}. Mode: {self.mode_of(session)}."
        self.mode.apply(session, wanted)
        await self.changed(session.id, mode=True)
        return f"Mode: {wanted}."


def options_updates(options: list[Any], modes: SessionModeState | None) -> list[Any]:
    """How a change is acknowledged: config_option_update, and current_mode_update for older clients."""
    updates: list[Any] = [ConfigOptionUpdate(session_update="config_option_update", config_options=options)]
    if modes is not None:
        updates.append(CurrentModeUpdate(session_update="current_mode_update", current_mode_id=modes.current_mode_id))
    return updates
