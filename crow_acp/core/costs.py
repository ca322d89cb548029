"""What a session has spent, from the profile's prices per million tokens; shown in usage_update."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..events import Cost, Usage, UsageChanged

if TYPE_CHECKING:
    from .session import Session

KEY = "cost"
USED = "context_used"
"""The tokens of the last priced model call (persisted with the total): what a load shows again."""


def charge(session: Session, usage: Usage) -> Cost | None:
    """Add one model call's price to the session's total (persisted); None when the profile has no prices."""
    profile = session.model.profile
    if profile.input_price is None or profile.output_price is None:
        return None
    price = (usage.prompt_tokens * profile.input_price + usage.completion_tokens * profile.output_price) / 1_000_000
    totals = session.data.setdefault(KEY, {})
    # One total per currency: a session can switch to a profile priced in another one.
    totals[profile.currency] = totals.get(profile.currency, 0.0) + max(price, 0.0)
    session.data[USED] = usage.total_tokens
    session.save()
    return Cost(round(totals[profile.currency], 6), profile.currency)


def total(session: Session) -> Cost | None:
    """The session's total in its current profile's currency, when that profile has prices."""
    profile = session.model.profile
    if profile.input_price is None or profile.output_price is None:
        return None
    return Cost(round(session.data.get(KEY, {}).get(profile.currency, 0.0), 6), profile.currency)


def shown_on_load(session: Session) -> UsageChanged | None:
    """The usage_update a loaded session shows again (the editor forgot its cost): only for a session that
    has been charged, in a profile that has prices. A damaged stored total shows nothing."""
    profile, totals, used = session.model.profile, session.data.get(KEY), session.data.get(USED)
    if profile.input_price is None or profile.output_price is None or not isinstance(totals, dict):
        return None
    amount = totals.get(profile.currency, 0.0)
    if not isinstance(amount, (int, float)) or isinstance(amount, bool) or not 0 <= amount < float("inf"):
        return None
    used = used if isinstance(used, int) and not isinstance(used, bool) and used >= 0 else 0
    return UsageChanged(session.id, used, profile.context_window, Cost(round(amount, 6), profile.currency))
