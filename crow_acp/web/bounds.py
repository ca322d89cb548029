"""What a `crow serve` client may name: directories inside the operator's roots, modes up to the cap.

A client holds a token, not the server's account. So every request that names a directory
(`cwd`, `additionalDirectories`: session/new, load, resume, fork, list, and whatever else carries
them) is checked here, before the agent sees it, on the RESOLVED path (symlinks and `..` followed):
anything outside every `--root` answers -32602 naming the path and the roots. The agent then gets
the resolved path, so a symlink swapped in after the check does not move the session.
A load or resume without `additionalDirectories` gets an empty list: the directories stored with
the session (perhaps by a local `crow acp`, outside the roots) are not taken unchecked.
session/set_mode and set_config_option for the mode above `--max-mode` are refused here too; the
agent's policy caps the mode as well ([permissions] max_mode), for a stored mode and `/mode`.
With `--users`, each connection is checked against its user's roots and cap (users.py), which lie
within the server's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from acp.meta import AGENT_METHODS

from ..config.tables import MODE_ORDER
from ..mcp.address_guard import ClientUrls
from .client_servers import ClientCommands

INVALID_PARAMS = -32602
REOPENING = frozenset({AGENT_METHODS["session_load"], AGENT_METHODS["session_resume"], AGENT_METHODS["session_fork"]})
SET_MODE = AGENT_METHODS["session_set_mode"]
SET_OPTION = AGENT_METHODS["session_set_config_option"]


@dataclass(frozen=True)
class ClientBounds:
    roots: tuple[str, ...] = ()
    """Resolved directories a client's paths must lie in (or be); empty: no bound (tests, embedding)."""
    max_mode: str = "full_access"
    owner: str | None = None
    """The `--users` user these bounds are for; None: the server's own (--root, --max-mode)."""

    @classmethod
    def of(cls, roots: list[str], max_mode: str, owner: str | None = None) -> ClientBounds:
        return cls(tuple(dict.fromkeys(os.path.realpath(os.path.expanduser(r)) for r in roots)), max_mode, owner)

    def contains(self, resolved: str) -> bool:
        return any(resolved == root or resolved.startswith(root.rstrip("/") + "/") for root in self.roots)

    def check(self, message: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """(the message to deliver, with resolved paths; the JSON-RPC error refusing it, or None)."""
        params = message.get("params")
        if not isinstance(params, dict):
            return message, None
        if (error := self._mode_refusal(message.get("method"), params)) is not None:
            return message, error
        if not self.roots:
            return message, None
        params = dict(params)
        if "cwd" in params:
            resolved, error = self._inside("cwd", params["cwd"])
            if error is not None:
                return message, error
            params["cwd"] = resolved
        directories = params.get("additionalDirectories")
        if directories is None and message.get("method") in REOPENING:
            directories = []  # not the stored ones, unchecked
        if directories is not None:
            if not isinstance(directories, list):
                return message, _error("additionalDirectories must be a list of paths", {})
            checked = []
            for directory in directories:
                resolved, error = self._inside("additionalDirectories", directory)
                if error is not None:
                    return message, error
                checked.append(resolved)
            params["additionalDirectories"] = checked
        return {**message, "params": params}, None

    def _inside(self, name: str, path: Any) -> tuple[str, dict[str, Any] | None]:
        if not isinstance(path, str) or not path.startswith("/") or "\0" in path:
            return "", _error(f"{name} must be an absolute path", {name: path})  # the agent says the same
        resolved = os.path.realpath(path)
        if self.contains(resolved):
            return resolved, None
        shown = f"{path} (resolved: {resolved})" if resolved != path else path
        whose = "this server's roots" if self.owner is None else f"the roots of user {self.owner}"
        source = "crow serve --root" if self.owner is None else "crow serve --users"
        return "", _error(
            f"{name} {shown} is outside {whose}: {', '.join(self.roots)} ({source})",
            {name: path, "resolved": resolved, "roots": list(self.roots)},
        )

    def _mode_refusal(self, method: Any, params: dict[str, Any]) -> dict[str, Any] | None:
        if method == SET_MODE:
            wanted = params.get("modeId")
        elif method == SET_OPTION and params.get("configId") == "mode":
            wanted = params.get("value")
        else:
            return None
        if wanted not in MODE_ORDER or MODE_ORDER.index(wanted) <= MODE_ORDER.index(self.max_mode):
            return None  # an unknown mode is the agent's to refuse
        allowed = list(MODE_ORDER[: MODE_ORDER.index(self.max_mode) + 1])
        whose = "this server's cap" if self.owner is None else f"the cap of user {self.owner}"
        return _error(
            f"mode {wanted!r} is above {whose}, {self.max_mode!r} (crow serve --max-mode)",
            {"mode": wanted, "allowed": allowed},
        )


def _error(text: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"code": INVALID_PARAMS, "message": text, "data": data}


@dataclass(frozen=True)
class ClientRules:
    """Everything a client's request is checked against before the agent sees it."""

    commands: ClientCommands = field(default_factory=ClientCommands)
    bounds: ClientBounds = field(default_factory=ClientBounds)
    urls: ClientUrls = field(default_factory=ClientUrls)
    """Where clients' HTTP/SSE MCP servers may point beyond the public internet (checked at connect time)."""

    def for_user(self, bounds: ClientBounds) -> ClientRules:
        """These rules with a user's roots and mode cap (users.py checked they lie within the server's)."""
        return ClientRules(self.commands, bounds, self.urls)

    def admit(self, message: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """(the message as delivered, or the JSON-RPC error that refuses it)."""
        if (refused := self.commands.refusal(message)) is not None:
            return message, refused
        return self.bounds.check(message)
