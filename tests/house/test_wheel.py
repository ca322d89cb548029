"""The wheel as the ACP registry installs it (`uvx crow-agent@VERSION acp`): built, installed alone into a
new venv, and its `crow-agent acp` driven through initialize, session/new and a prompt. It proves the wheel
carries what crow reads at run time (the system prompt template among them). Slow: one test."""

from __future__ import annotations

import os
import sys

import anyio
import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process
from acp.schema import ClientCapabilities, Implementation
from support.helpers import RecordingClient, text
from support.wheel_venv import tool_venv

from crow_acp.testing import Reply, ScriptedModel

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="session")
def installed(tmp_path_factory):
    return tool_venv(tmp_path_factory.mktemp("wheel"))


@pytest.mark.timeout(1200)
async def test_the_installed_wheel_serves_a_prompt(installed, tmp_path):
    script = installed / "crow-agent"
    assert script.exists() and not (installed / "python").resolve().is_relative_to(sys.prefix)
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CROW_", "PYTHON", "VIRTUAL_ENV"))}
    client = RecordingClient()
    async with ScriptedModel([Reply(text="from the wheel")]) as model:
        env |= {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": model.base_url, "CROW_HOME": str(home)}
        with anyio.fail_after(120):
            async with spawn_agent_process(client, str(script), "acp", env=env, cwd=str(tmp_path)) as (conn, _):
                init = await conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=ClientCapabilities(),
                    client_info=Implementation(name="t", version="0"),
                )
                assert init.agent_info.name == "crow" and init.auth_methods
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                done = await conn.prompt(session_id=sid, prompt=[text("hello")])
    assert done.stop_reason == "end_turn"
    assert "from the wheel" in client.text()
    system = model.requests[0]["messages"][0]
    assert system["role"] == "system" and len(system["content"]) > 200  # crow_prompt's template, from the wheel
