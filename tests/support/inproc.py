"""Crow driven in this process: the agent `crow acp` would serve, a FunctionModel, a RecordingClient as the editor.

For tests of logic (hooks, patterns, compaction, skills): no subprocess, no sockets. What only the
wire, signals or a second process can prove stays with helpers.run_crow.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from crow.agent_loader import load_agent
from crow_acp.testing.function_model import FunctionModel
from support.helpers import in_process


@asynccontextmanager
async def crow(
    home: Path, model: FunctionModel, monkeypatch: Any, client: Any = None, agent: str | None = None
) -> AsyncIterator[Any]:
    """`crow acp [--agent SPEC]` with CROW_HOME=home, in process; yields the agent (it takes the ACP calls)."""
    monkeypatch.setenv("CROW_HOME", str(home))
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    from crow_acp.config import load_config

    served = load_agent(agent, load_config())
    model.install(served)
    if client is not None:
        served.on_connect(client)
    async with in_process(served):
        yield served
