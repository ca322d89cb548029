"""`crow chat --agent tests/agents/chat_agent.py:build`: the default agent, whose session/list fails and whose
cursor never ends after that, for crow chat's /sessions (tests/cli/test_chat.py)."""

from __future__ import annotations

from typing import Any

from acp import RequestError
from acp.schema import ListSessionsResponse

from crow.presets import default_callbacks
from crow_acp import AcpAgent


class StubbornAgent(AcpAgent):
    listed = 0

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **_: Any) -> Any:
        StubbornAgent.listed += 1
        if StubbornAgent.listed == 1:
            raise RequestError.internal_error({"details": "the session list is gone"})
        return ListSessionsResponse(sessions=[], next_cursor="again")


def build() -> AcpAgent:
    agent = StubbornAgent()
    agent.set_callbacks(default_callbacks(agent.config))
    return agent
