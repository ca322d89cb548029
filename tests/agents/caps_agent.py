"""`crow acp --agent tests/agents/caps_agent.py:build`: the default agent, writing the client capabilities
it is offered at initialize to $CAPS_FILE (tests/cli/test_run_capabilities.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from crow.presets import default_callbacks
from crow_acp import AcpAgent


def record(client_capabilities: Any) -> None:
    Path(os.environ["CAPS_FILE"]).write_text(client_capabilities.model_dump_json(by_alias=True))


class RecordingAgent(AcpAgent):
    async def initialize(self, protocol_version: int, client_capabilities: Any = None, **kwargs: Any) -> Any:
        record(client_capabilities)
        return await super().initialize(protocol_version, client_capabilities, **kwargs)


def build() -> AcpAgent:
    agent = RecordingAgent()
    agent.set_callbacks(default_callbacks(agent.config))
    return agent
