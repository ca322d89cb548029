"""Every `/acp` request's user: its bearer token checked against the users (users.py), wrong tokens
throttled per address (throttle.py), and the connections of users removed or changed ended.

The users file is checked for a change on every request, by a watcher every second, and on SIGHUP
(run.py), so a removed user's open WebSocket and SSE streams end even while they send nothing.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from .connection import CrowConnection, CrowRegistry
from .throttle import Throttle
from .users import User, Users

log = logging.getLogger(__name__)

UNAUTHORIZED = 401
TOO_MANY = 429
WATCH_EVERY = 1.0
"""Seconds between checks of the users file for a change."""


class Auth:
    def __init__(self, users: Users, throttle: Throttle | None = None) -> None:
        self.users = users
        self.throttle = throttle or Throttle()

    def check(self, scope: dict[str, Any], authorization: str | None) -> User | int:
        """The request's user, or the status refusing it (401, or 429 for an address guessing tokens)."""
        address = (scope.get("client") or ("?", 0))[0]
        if self.throttle.blocked(address):
            return TOO_MANY
        scheme, _, value = (authorization or "").partition(" ")
        token = value.strip() if scheme.lower() == "bearer" and value.strip() else None
        user = self.users.authenticate(token)
        if user is None:
            self.throttle.failed(address)
            return UNAUTHORIZED
        return user

    async def refresh(self, registry: CrowRegistry, *, force: bool = False) -> None:
        """Re-read the users if their file changed (or `force`); end the connections of those gone or changed."""
        gone = self.users.reload(force=force)
        if not gone:
            return
        for connection in registry.connections:
            if isinstance(connection, CrowConnection) and connection.user.name in gone:
                log.info("ending connection %s of user %s", connection.connection_id, connection.user.name)
                await registry.remove(connection.connection_id)

    async def watch(self, registry: CrowRegistry) -> None:
        while True:
            await asyncio.sleep(WATCH_EVERY)
            try:
                await self.refresh(registry)
            except Exception:  # the watcher's boundary: a failure to end one connection must not stop it
                log.exception("users file check failed")
