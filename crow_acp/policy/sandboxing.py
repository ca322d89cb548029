"""Which sandbox a command runs in: what the config allows, what the call asks for, what the machine can do.

crow's own command tool (a FunctionTool with `sandboxed=True`) asks with its `sandbox` argument: "on"
(the default), "network" or "off". The policy turns that into the call's Sandbox (permissions.py
decides whether that needs a question). When the sandbox is disabled or cannot run here, every
command would run outside it, so every command asks; nothing falls back to unsandboxed silently.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ..api import Sandbox
from ..editor.sandbox import SandboxNotice
from ..tools import FunctionTool

if TYPE_CHECKING:
    from ..api import Tool
    from ..config import SandboxConfig
    from ..core.session import Session

OUTSIDE = Sandbox(level="off")


def is_sandboxed(tool: Tool) -> bool:
    return isinstance(tool, FunctionTool) and tool.sandboxed


class SandboxPolicy:
    def __init__(self, config: SandboxConfig, home: Path, protected: tuple[str, ...] = ()) -> None:
        self.enabled = config.enabled
        self.base = Sandbox(
            protected=protected,
            home_visible=tuple(config.home_visible),
            network=config.network,
            writable=tuple(config.writable),
            hidden=(str(home), *config.hidden),
            max_processes=config.max_processes,
            cpu_seconds=config.cpu_seconds,
            memory_mb=config.memory_mb,
        )

    async def unusable(self, session: Session) -> str | None:
        """Why this session's commands cannot run sandboxed now (disabled, or the machine that runs them
        cannot: crow's, or the editor's once its terminal showed it), or None."""
        if not self.enabled:
            return "the sandbox is disabled ([sandbox] enabled = false)"
        caps = session.client_capabilities
        if session.client is not None and caps is not None and caps.terminal:
            from ..editor.terminal_sandbox import unavailable_in_editor

            return unavailable_in_editor(session.client)  # its machine, not crow's: known once a command ran
        from ..editor.sandbox import unavailable

        return await anyio.to_thread.run_sync(unavailable)

    def wanted(self, arguments: dict[str, Any]) -> Sandbox:
        """The sandbox the call asks for: the configured one, with the network, or none."""
        match arguments.get("sandbox"):
            case "off":
                return OUTSIDE
            case "network":
                return dataclasses.replace(self.base, network=True)
            case _:
                return self.base

    def escalates(self, sandbox: Sandbox) -> bool:
        """More than the configured sandbox: outside it, or the network when the config keeps it off."""
        return sandbox.level == "off" or (sandbox.network and not self.base.network)

    def read_only(self) -> Sandbox:
        """Plan mode's: nothing writable, no network."""
        return dataclasses.replace(self.base, level="read_only", network=False, writable=())


def unavailable_notice(config: SandboxConfig, editor: Any = None) -> SandboxNotice | None:
    """The "sandbox unavailable" notice, or None while commands run sandboxed (or the user turned it off).
    `editor`: the client connection when its terminals run the commands (its machine, known once one
    failed to start); else crow's own machine is probed (blocks, once per process: call it off the loop)."""
    if not config.enabled:
        return None
    if editor is not None:
        from ..editor.terminal_sandbox import unavailable_in_editor

        why = unavailable_in_editor(editor)
    else:
        from ..editor.sandbox import unavailable

        why = unavailable()
    return None if why is None else SandboxNotice.because(why)
