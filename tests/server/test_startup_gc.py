"""crow acp starts with the cyclic garbage collector off, and once its agent is built freezes what start-up
made and turns it back on (crow_acp/server/startup_gc.py): later collections skip the start-up heap."""

from __future__ import annotations

import gc
import json

import pytest
from support.helpers import TESTS, RecordingClient, crow_env, run_crow

from crow_acp import AcpAgent
from crow_acp.server import startup_gc
from crow_acp.server.lazy_agent import LazyAgent

pytestmark = pytest.mark.anyio
GC_AGENT = f"{TESTS / 'agents' / 'gc_agent.py'}:build"


async def test_an_agent_module_is_served_with_start_up_frozen_and_collection_on(tmp_path):
    record = tmp_path / "gc.json"
    env = crow_env(tmp_path / "home", "http://127.0.0.1:9/v1", GC_FILE=str(record))
    async with run_crow(RecordingClient(), env, "--agent", GC_AGENT, exec_=True):
        pass
    seen = json.loads(record.read_text())
    assert seen["enabled"], "collection must be back on once the agent is built"
    assert seen["frozen"] > 10_000, "the start-up heap (acp, pydantic models, crow) is frozen"


async def test_the_default_agent_turns_collection_back_on_once_built():
    startup_gc.pause()
    try:
        assert not gc.isenabled()
        lazy = LazyAgent(AcpAgent)
        lazy.on_connect(None)
        assert isinstance(await lazy.agent(), AcpAgent)
        assert gc.isenabled() and gc.get_freeze_count() > 0
    finally:
        gc.enable()
        gc.unfreeze()  # this test process's heap goes back to the collector
