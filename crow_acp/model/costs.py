"""What a session has spent, from the profile's prices per million tokens; shown in usage_update.

Beside the model's prices (ModelProfile, client.py); the loop charges each call (core/loop.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..events import Cost, Usage, UsageChanged

if TYPE_CHECKING:
    from .client import ModelClient


class Session(Protocol):
    """What costs reads and writes of a session (core/session.py Session): its model, its data, save()."""

    @property
    def id(self) -> str: ...
    @property
    def model(self) -> ModelClient: ...
    @property
    def data(self) -> dict[str, Any]: ...
    def save(self) -> None: ...


KEY = "cost"
USED = "context_used"
"""The tokens of the last priced model call (persisted with the total): what a load shows again."""


def charge(session: Session, usage: Usage) -> Cost | None:
    """Add one model call's price to the session's total (persisted); None when the profile has no prices."""
    profile = session.model.profile
    if profile.input_price is None or profile.output_price is None:
        return None
    price = price_of(usage, profile.input_price, profile.output_price, profile.cache_read_price,
                     profile.cache_write_price)  # fmt: skip
    totals = session.data.setdefault(KEY, {})
    # One total per currency: a session can switch to a profile priced in another one.
    totals[profile.currency] = totals.get(profile.currency, 0.0) + max(price, 0.0)
    session.data[USED] = usage.total_tokens
    session.save()
    return Cost(round(totals[profile.currency], 6), profile.currency)


def price_of(
    usage: Usage, input_price: float, output_price: float, read_price: float | None, write_price: float | None
) -> float:
    """One call's price: uncached input, cache reads and cache writes each at their own rate (a rate the
    profile leaves unset is the input price), and the output."""
    read, written = max(usage.cache_read_tokens, 0), max(usage.cache_write_tokens, 0)
    uncached = max(usage.prompt_tokens - read - written, 0)
    read_rate = input_price if read_price is None else read_price
    write_rate = input_price if write_price is None else write_price
    cost = uncached * input_price + read * read_rate + written * write_rate + usage.completion_tokens * output_price
    return cost / 1_000_000


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
