"""What a session has spent, from the profile's prices per million tokens; shown in usage_update."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .events import Cost, Usage

if TYPE_CHECKING:
    from .session import Session

KEY = "cost"


def charge(session: Session, usage: Usage) -> Cost | None:
    """Add one model call's price to the session's total (persisted); None when the profile has no prices."""
    profile = session.model.profile
    if profile.input_price is None or profile.output_price is None:
        return None
    price = (usage.prompt_tokens * profile.input_price + usage.completion_tokens * profile.output_price) / 1_000_000
    totals = session.data.setdefault(KEY, {})
    # One total per currency: a session can switch to a profile priced in another one.
    totals[profile.currency] = totals.get(profile.currency, 0.0) + max(price, 0.0)
    session.save()
    return Cost(round(totals[profile.currency], 6), profile.currency)


def total(session: Session) -> Cost | None:
    """The session's total in its current profile's currency, when that profile has prices."""
    profile = session.model.profile
    if profile.input_price is None or profile.output_price is None:
        return None
    return Cost(round(session.data.get(KEY, {}).get(profile.currency, 0.0), 6), profile.currency)
