"""The agent's link to its editor: the connection, what the client said it can do, where replays go.

One object, shared by the collaborators that talk to the editor, because the link exists only
after the agent is built: the SDK calls `on_connect` and then `initialize` on the agent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..rpc.shapes import ClientFeatures
from .replay import OneByOne, UpdateSink


@dataclass
class EditorLink:
    conn: Any = None
    """The SDK's connection to the editor; None in process, with no editor attached."""
    capabilities: Any = None
    """The client capabilities of the editor's initialize request."""
    features: ClientFeatures = field(default_factory=ClientFeatures)
    """The newer capabilities of that request (notices, compaction, plan operations, subagents...)."""
    sandbox_told: bool = False
    """Whether the editor was told that commands cannot run sandboxed here (warnings.py, once)."""
    update_sink: UpdateSink | None = None
    """Where a load's replay goes; None: through `conn`, one update at a time (crow serve sets its own)."""

    def replay_sink(self) -> UpdateSink | None:
        if self.conn is None:
            return None
        return self.update_sink or OneByOne(self.conn)
