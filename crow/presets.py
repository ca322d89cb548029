"""Ready agents. `default_agent` is what `crow acp` serves when no --agent is given."""

from __future__ import annotations

from typing import Any

from crow_acp.agent import AcpAgent
from crow_acp.hooks import CrowCallbacks


def default_callbacks(config: Any = None) -> CrowCallbacks:
    """The default prompt, skills and compaction callbacks (each package adds its part here)."""
    return CrowCallbacks()


def default_agent(config: Any = None) -> AcpAgent:
    agent = AcpAgent(config)
    agent.set_callbacks(default_callbacks(agent.config))
    return agent
