"""The thinking-level picker: an ACP config option (category thought_level) for reasoning models.

Offered only when the session's profile declares `reasoning = true`; the chosen level is kept in
the session's data, and core/request.py sends it as the provider's `reasoning_effort` on every model call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acp import RequestError
from acp.schema import SessionConfigOptionSelect, SessionConfigSelectOption

from ...core.request import THINKING_KEY as OPTION_ID
from ...core.request import THINKING_LEVELS
from ...core.request import thinking_level as level

if TYPE_CHECKING:
    from ...core.session import Session

DESCRIPTIONS = ("Quicker answers", "The provider's usual depth", "Thinks longest")
LEVELS = dict(zip(THINKING_LEVELS, DESCRIPTIONS, strict=True))


def offered(session: Session) -> bool:
    return session.model.profile.reasoning


def options(session: Session) -> list[SessionConfigOptionSelect]:
    """The thinking-level option, or nothing for a profile that does not reason."""
    if not offered(session):
        return []
    current = level(session)
    choices = [SessionConfigSelectOption(value=key, name=key.title(), description=text) for key, text in LEVELS.items()]
    return [
        SessionConfigOptionSelect(
            type="select",
            id=OPTION_ID,
            name="Thinking",
            category="thought_level",
            current_value=current if current in LEVELS else "medium",
            options=choices,
        )
    ]


def choose(session: Session, value: object) -> None:
    """Set the session's level (remembered in the store); an unknown value or a non-reasoning model is refused."""
    if not offered(session) or not isinstance(value, str) or value not in LEVELS:
        raise RequestError.invalid_params(
            {"configId": OPTION_ID, "value": value, "levels": list(LEVELS) if offered(session) else []}
        )
    session.data[OPTION_ID] = value
    session.save()
