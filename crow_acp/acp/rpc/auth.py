"""Authentication as ACP defines it: the method initialize offers, `authenticate`, `logout`, and the
auth_required (-32000) answer of session/new, load and resume when crow's model has no usable key.

The method is `crow setup` run in a terminal (a terminal method, for a client that advertised terminal
auth: `clientCapabilities.auth.terminal`, or the older `_meta["terminal-auth"]`); to any other client
the same id is an agent method. `authenticate` re-reads what `crow setup` stored and answers once a
credential is usable; `logout` removes the stored credentials (never the environment's): auth_gate.py.
This module is on `crow acp`'s start-up path (capabilities.py): it imports only the SDK's schema.
"""

from __future__ import annotations

import sys
from typing import Any

from acp.schema import AuthMethodAgent, ClientCapabilities, TerminalAuthMethod

METHOD_ID = "crow-setup"
NAME = "Set up crow"
DESCRIPTION = "Run `crow setup` in a terminal: choose a provider and a model, paste the key (stored 0600)."


def auth_methods(client_capabilities: ClientCapabilities | None) -> list[Any]:
    """What initialize offers this client."""
    if not _terminal_auth(client_capabilities):
        return [AuthMethodAgent(id=METHOD_ID, name=NAME, description=DESCRIPTION)]
    legacy = {"command": sys.executable, "args": ["-m", "crow", "setup"], "label": "crow setup"}
    return [
        TerminalAuthMethod(
            type="terminal",
            id=METHOD_ID,
            name=NAME,
            description=DESCRIPTION,
            args=["setup"],
            field_meta={"terminal-auth": legacy},
        )
    ]


def _terminal_auth(capabilities: ClientCapabilities | None) -> bool:
    """clientCapabilities.auth.terminal, or the older clientCapabilities._meta["terminal-auth"]."""
    if capabilities is None:
        return False
    meta = capabilities.field_meta or {}
    return bool(capabilities.auth and capabilities.auth.terminal) or meta.get("terminal-auth") is True
