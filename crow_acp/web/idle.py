"""Connections whose client is gone: their leases run out, then they are closed as a DELETE closes them.

An HTTP client that dies (killed, a laptop closed, a crash) sends no DELETE: its connection, agent,
sessions, MCP servers and leases would live as long as the server, and `--max-connections` of them
lock everyone out. A connection is busy while one of its HTTP requests or streams is open (a WebSocket
is one long stream, and ends when its socket does). Once it is not:

- its agent's leases are no longer renewed, so another server can load its sessions once they expire
  (`lease_ttl`); renewal resumes if the client comes back before anyone took them;
- after `--idle-timeout` seconds it is closed like a DELETE: turns cancelled, MCP servers closed,
  leases released.

Activity (here) says how long a connection has been quiet; reaper.py acts on it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator


class Activity:
    """How many of a connection's requests and streams are open, and since when none is."""

    def __init__(self) -> None:
        self.open = 0
        self.quiet_since = time.monotonic()

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        self.open += 1
        try:
            yield
        finally:
            self.open -= 1
            self.quiet_since = time.monotonic()

    def idle_for(self, now: float) -> float:
        return 0.0 if self.open else now - self.quiet_since
