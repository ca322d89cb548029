"""`crow acp --agent tests/agents/gc_agent.py:build`: the core agent, writing the garbage collector's state
at initialize to $GC_FILE (tests/server/test_startup_gc.py)."""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path
from typing import Any

from crow_acp import AcpAgent


def record() -> None:
    state = {"enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}
    Path(os.environ["GC_FILE"]).write_text(json.dumps(state))


class GcReportingAgent(AcpAgent):
    async def initialize(self, protocol_version: int, client_capabilities: Any = None, **kwargs: Any) -> Any:
        record()
        return await super().initialize(protocol_version, client_capabilities, **kwargs)


def build() -> AcpAgent:
    return GcReportingAgent()
