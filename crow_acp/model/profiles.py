"""The models a session can switch between: Zed's model picker is an ACP config option."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from acp.schema import SessionConfigOptionSelect, SessionConfigSelectOption

from ..config import Config
from .client import ModelClient
from .wires import make_client

OPTION_ID = "model"


class Models:
    """The configured model profiles, with one client each, made on first use."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._clients: dict[str, ModelClient] = {}
        self._factory: Callable[[Config], ModelClient] = make_client
        self._retired: list[ModelClient] = []
        self.in_process = False
        """True once `use` gave a model in process: sessions need no key (acp/rpc/auth.py)."""

    @property
    def default(self) -> str:
        return self.config.model

    def names(self) -> list[str]:
        """Every profile in [models], and the configured model when it is a raw model id."""
        names = list(self.config.models)
        return names if self.default in names else [self.default, *names]

    def client(self, name: str | None = None) -> ModelClient:
        name = name if name in self.names() else self.default
        if name not in self._clients:
            self._clients[name] = self._factory(self.config.model_copy(update={"model": name}))
        return self._clients[name]

    def use(self, client: ModelClient) -> None:
        """Sessions opened from now on talk to `client`, whatever profile they pick (an in-process model)."""
        self._factory = lambda _config: client
        self._clients.clear()
        self.in_process = True

    def forget_clients(self) -> None:
        """Make the clients again on next use (the stored key changed); the old ones close at close()."""
        self._retired.extend(self._clients.values())
        self._clients.clear()

    def option(self, current: str | None) -> SessionConfigOptionSelect:
        choices = [
            SessionConfigSelectOption(value=name, name=name, description=self.client(name).profile.model)
            for name in self.names()
        ]
        current = current if current in self.names() else self.default
        return SessionConfigOptionSelect(
            type="select", id=OPTION_ID, name="Model", category="model", current_value=current, options=choices
        )

    async def close(self) -> None:
        await asyncio.gather(*(client.close() for client in [*self._clients.values(), *self._retired]))
