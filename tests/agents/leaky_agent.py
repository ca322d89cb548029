"""`crow acp --agent tests/agents/leaky_agent.py:build`: a callback whose exception quotes the model key,
so crow logs a traceback holding it (tests/policy/test_redaction.py)."""

from __future__ import annotations

import os
from typing import Any

from crow_acp import AcpAgent, CrowCallbacks, SessionAccess


def build() -> AcpAgent:
    def leak(session: SessionAccess, **_: Any) -> None:
        raise RuntimeError(f"the proxy refused https://api.example/v1?key={os.environ['CROW_TEST_MAIN_KEY']}")

    agent = AcpAgent()
    agent.set_callbacks(CrowCallbacks(pre_request=[leak]))
    return agent
