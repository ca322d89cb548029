"""fast-agent from PyPI (tests/fast_agent.py installs it once) as a chain member, on a scripted model:
a third-party ACP agent, unchanged, driven by crow as its client."""

from __future__ import annotations

import anyio
import multi_support
import pytest
from fast_agent import ensure
from helpers import RecordingClient, text
from multi_support import functions

from crow_acp.testing import Reply, ScriptedModel

pytestmark = pytest.mark.anyio


async def test_fast_agent_is_a_chain_member(crow_home, tmp_path, monkeypatch):
    command = await anyio.to_thread.run_sync(ensure)
    models = functions(coder=[Reply(text="review this please")])
    client = RecordingClient()
    async with ScriptedModel([Reply(text="FAST AGENT REVIEW")]) as fast_model:
        config = tmp_path / "fastagent.config.yaml"
        config.write_text(f"generic:\n  api_key: test-key\n  base_url: {fast_model.base_url}\n")
        env = {"FAST_AGENT_BIN": str(command), "FAST_AGENT_CONFIG": str(config)}
        monkeypatch.setattr(multi_support, "AGENTS", multi_support.TESTS / "agents" / "foreign_graphs.py")
        async with multi_support.in_process(client, "build_fast_agent", crow_home, models, monkeypatch, env) as conn:
            with anyio.fail_after(180):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                response = await conn.prompt(session_id=sid, prompt=[text("go")])
    assert response.stop_reason == "end_turn"
    assert multi_support.last_user(fast_model.requests[0]) == "review this please"
    assert "**fast:** FAST AGENT REVIEW" in client.text()
