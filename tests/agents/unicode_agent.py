"""An agent whose callbacks write invalid Unicode: `crow acp --agent tests/agents/unicode_agent.py:build`.

When the user's prompt contains POISON, pre_request adds a message, a context value and a system
prompt that each hold a lone surrogate. Crow must repair them before they reach the store or a request.
"""

from __future__ import annotations

from typing import Any

from crow_acp import AcpAgent, CrowCallbacks, SessionAccess


async def poison(session: SessionAccess, *, step: int, **_: Any) -> None:
    last = session.get_messages()[-1]
    if step == 0 and "POISON" in str(last.get("content")):
        session.add_message("user", "a note from a callback \ud800 with a lone half")
        session.set_context("note", {"bad \udfff key": ["value \ud83d"]})
        session.set_system_prompt("system prompt \udc00 with a lone half")


def build() -> AcpAgent:
    agent = AcpAgent()
    agent.set_callbacks(CrowCallbacks(pre_request=[poison]))
    return agent
