"""The credential gate: session/new, load, resume and fork answer auth_required (-32000) while crow's own
model has no usable key; `authenticate` and `logout` (rpc/auth.py names the method)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from acp import RequestError

from ...config.credentials import load_credentials, remove_credentials
from ...config.key_source import auth_message, has_credential
from ...errors import ConfigError
from ...util.secrets import protect
from ..rpc.auth import METHOD_ID

if TYPE_CHECKING:
    from ...config import Config
    from ...model.profiles import Models

log = logging.getLogger(__name__)

AUTH_REQUIRED = -32000


class CredentialGate:
    """Whether crow's own model can be called, and the stored credentials read again when asked."""

    def __init__(self, config: Config, models: Models) -> None:
        self.config = config
        self.models = models
        self.enforced = False
        """Whether session/new, load, resume and fork are refused without a key: `crow acp` and `crow serve`
        turn it on for crow's default agent. An agent built in Python keeps the older way (its first prompt
        says which variable to set), so a graph's members and embedders need no key to open a session."""

    def require(self) -> None:
        """Nothing, or auth_required: the stored credentials are read again first (`crow setup` may just
        have written them in another process). A model in process needs no key."""
        if not self.enforced or self._usable():
            return
        raise RequestError(AUTH_REQUIRED, f"Authentication required. {auth_message(self.config)}")

    def authenticate(self, method_id: str) -> None:
        """Answers once a credential is usable (the stored one read again), else auth_required."""
        if method_id != METHOD_ID:
            problem = f"unknown auth method {method_id!r}; crow offers {METHOD_ID!r}"
            raise RequestError.invalid_params({"methodId": problem})
        if self._usable():
            return
        raise RequestError(AUTH_REQUIRED, f"Authentication required. {auth_message(self.config)}")

    def logout(self) -> None:
        """The stored credentials removed, here and on disk; the environment's keys stay."""
        if remove_credentials(self.config.home):
            log.info("stored credentials removed (logout)")
        self.config.use_stored(None)
        self.models.forget_clients()

    def _usable(self) -> bool:
        return self.models.in_process or has_credential(self.config) or self._reload()

    def _reload(self) -> bool:
        try:
            stored = load_credentials(self.config.home)
        except ConfigError as exc:  # refused (a symlink, readable by others) or damaged: say which and how to fix
            raise RequestError(AUTH_REQUIRED, f"Authentication required. {exc}") from exc
        if stored is None or stored == self.config.stored:
            return False
        self.config.use_stored(stored)
        protect(self.config)  # the new key joins the redacted values before any request carries it
        self.models.forget_clients()
        return has_credential(self.config)
