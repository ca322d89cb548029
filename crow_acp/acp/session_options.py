"""A session's config options for the editor, in one list: model, mode (and more as they come).

Each option is a small object with `build(session)` (the ACP options it offers now, with their
current values: none when it does not apply) and `apply(session, value)` (validate, set, persist).
To add one, write such a class and add it to `SessionOptions.options`; the agent's handlers need
no change.
The mode option is also offered through the older mode API (`modes` in session responses,
session/set_mode, current_mode_update), for clients that know only that one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from acp import RequestError
from acp.schema import (
    ConfigOptionUpdate,
    CurrentModeUpdate,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from ..api import SlashCommand
from ..policy.modes import MODE_IDS, MODES, Mode, current_mode, set_mode
from . import thinking
from .session_pool import SessionLifecycle

if TYPE_CHECKING:
    from ..config import Config
    from ..core.session import Session
    from ..core.session_access import SessionView
    from ..model.profiles import Models

MODE_OPTION = "mode"


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

    def __init__(self, default: Mode) -> None:
        self.default = default

    def build(self, session: Session) -> list[Any]:
        choices = [SessionConfigSelectOption(value=m.id, name=m.name, description=m.description) for m in MODES]
        current = current_mode(session, self.default)
        return [
            SessionConfigOptionSelect(
                type="select", id=self.id, name="Mode", category="mode", current_value=current, options=choices
            )
        ]

    def apply(self, session: Session, value: Any) -> None:
        if value not in MODE_IDS:
            raise RequestError.invalid_params({"configId": self.id, "value": value, "allowed": list(MODE_IDS)})
        set_mode(session, value)

    def state(self, session: Session) -> SessionModeState:
        """The same modes for the older API."""
        modes = [SessionMode(id=m.id, name=m.name, description=m.description) for m in MODES]
        return SessionModeState(current_mode_id=current_mode(session, self.default), available_modes=modes)


class ThinkingOption:
    """The thinking level for reasoning profiles (thinking.py)."""

    id = thinking.OPTION_ID

    def build(self, session: Session) -> list[Any]:
        return list(thinking.options(session))

    def apply(self, session: Session, value: Any) -> None:
        thinking.choose(session, value)


class SessionOptions:
    """Every config option a session offers, in the order the editor shows them."""

    def __init__(self, models: Models, config: Config) -> None:
        self.mode = ModeOption(config.permissions.default_mode)
        self.options: list[SessionOption] = [ModelOption(models), self.mode, ThinkingOption()]

    def build(self, session: Session) -> list[Any]:
        return [built for option in self.options for built in option.build(session)]

    def apply(self, session: Session, config_id: str, value: Any) -> None:
        option = next((o for o in self.options if o.id == config_id), None)
        if option is None:
            raise RequestError.invalid_params({"configId": config_id, "known": [o.id for o in self.options]})
        option.apply(session, value)


def options_updates(options: list[Any], modes: SessionModeState | None) -> list[Any]:
    """How a change is acknowledged: config_option_update, and current_mode_update for older clients."""
    updates: list[Any] = [ConfigOptionUpdate(session_update="config_option_update", config_options=options)]
    if modes is not None:
        updates.append(CurrentModeUpdate(session_update="current_mode_update", current_mode_id=modes.current_mode_id))
    return updates


Changed = Callable[[str], Awaitable[None]]
"""Called with the session id after /mode changed its mode: the agent tells the editor."""


def mode_command(options: SessionOptions, session_for: Callable[[str], Session], changed: Changed) -> SlashCommand:
    """`/mode [ask|accept_edits|plan|full_access]`: show or switch this session's permission mode."""

    async def handler(access: SessionView, argument: str) -> str:
        session = session_for(access.session_id)
        wanted = argument.strip().lower().replace(" ", "_").replace("-", "_")
        listing = ", ".join(f"{m.id} ({m.name})" for m in MODES)
        if not wanted:
            return f"Mode: {current_mode(session, options.mode.default)}. Modes: {listing}."
        if wanted not in MODE_IDS:
            return f"Unknown mode {argument.strip()!r}. Modes: {listing}."
        options.mode.apply(session, wanted)
        await changed(session.id)
        return f"Mode: {wanted}."

    return SlashCommand("mode", "Show or switch the permission mode", handler, hint="ask | accept_edits | plan | full_access")


class OptionHandlers(SessionLifecycle):
    """The ACP handlers for a session's config options and modes (AcpAgent inherits them); an evicted
    session is opened again first (SessionLifecycle._live)."""

    options: SessionOptions
    conn: Any

    async def set_config_option(self, config_id: str, session_id: str, value: Any, **_: Any) -> Any:
        """The editor's pickers (model, mode, ...): set for this session, remembered, acknowledged."""
        session = await self._live(session_id)
        self.options.apply(session, config_id, value)
        await self._options_changed(session_id, mode=config_id == MODE_OPTION)
        return SetSessionConfigOptionResponse(config_options=self.config_options(session_id))

    async def set_session_mode(self, mode_id: str, session_id: str, **_: Any) -> SetSessionModeResponse:
        """The older mode API: the same modes as the "mode" config option."""
        self.options.apply(await self._live(session_id), MODE_OPTION, mode_id)
        await self._options_changed(session_id, mode=True)
        return SetSessionModeResponse()

    def mode_of(self, session_id: str) -> Mode:
        """The session's permission mode."""
        return current_mode(self._session(session_id), self.options.mode.default)

    def set_mode(self, session_id: str, mode: Mode) -> None:
        """Set the session's mode without telling the editor (a MultiAgent's other members follow the entry)."""
        self.options.apply(self._session(session_id), MODE_OPTION, mode)

    def config_options(self, session_id: str) -> list[Any]:
        """The session's config options for the editor (session_options.py)."""
        return self.options.build(self.sessions[session_id])

    def _modes(self, session_id: str) -> Any:
        return self.options.mode.state(self.sessions[session_id])

    async def _options_changed(self, session_id: str, *, mode: bool) -> None:
        if self.conn and session_id in self.sessions:
            current = self.sessions[session_id]
            for update in options_updates(self.options.build(current), self._modes(session_id) if mode else None):
                await self.conn.session_update(session_id=session_id, update=update)
