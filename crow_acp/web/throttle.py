"""Wrong tokens, counted per client address: after `limit` in a window, that address gets 429 until the
window ends (guessing a 43-character token is hopeless anyway; this keeps the log and the CPU quiet).

Memory is bounded: at most `max_addresses` addresses are remembered, the oldest forgotten first. Behind
a reverse proxy every client has the proxy's address: the limit then holds for all of them together.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable


class Throttle:
    def __init__(
        self,
        limit: int = 10,
        window: float = 60.0,
        max_addresses: int = 4096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit, self.window, self.max_addresses, self.clock = limit, window, max_addresses, clock
        self._failures: OrderedDict[str, tuple[float, int]] = OrderedDict()

    def blocked(self, address: str) -> bool:
        entry = self._current(address)
        return entry is not None and entry[1] >= self.limit

    def failed(self, address: str) -> None:
        entry = self._current(address)
        start, count = entry if entry is not None else (self.clock(), 0)
        self._failures[address] = (start, count + 1)
        self._failures.move_to_end(address)
        while len(self._failures) > self.max_addresses:
            self._failures.popitem(last=False)

    def _current(self, address: str) -> tuple[float, int] | None:
        entry = self._failures.get(address)
        if entry is not None and self.clock() - entry[0] >= self.window:
            del self._failures[address]
            return None
        return entry
