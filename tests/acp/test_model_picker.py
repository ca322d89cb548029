"""Zed's model picker (an ACP config option), and cancel reaching a prompt that waits its turn."""

from __future__ import annotations

import anyio
import pytest
from acp import RequestError
from support.helpers import CORE_AGENT, RecordingClient, crow_env, text, write_config
from support.hosted import hosted_crow
from support.inproc import crow

from crow_acp.testing import Reply, ScriptedModel
from crow_acp.testing.function_model import FunctionModel

PROFILES = """
model = "fast"
[models.fast]
model = "fast-model-id"
[models.smart]
model = "smart-model-id"
context_window = 200000
"""


def model_option(options):
    [option] = [o for o in (o.root if hasattr(o, "root") else o for o in options) if o.id == "model"]
    return option


@pytest.mark.anyio
async def test_the_model_picker_switches_and_remembers_the_model(crow_home):
    write_config(crow_home, PROFILES)
    with ScriptedModel(default=Reply(text="ok")) as model:
        env = crow_env(crow_home, model.base_url)
        with anyio.fail_after(60):
            async with hosted_crow(RecordingClient(), env, "--agent", CORE_AGENT) as (conn, _):
                created = await conn.new_session(cwd=str(crow_home), mcp_servers=[])
                option = model_option(created.config_options)
                assert (option.id, option.category, option.current_value) == ("model", "model", "fast")
                assert [(o.value, o.description) for o in option.options] == [
                    ("fast", "fast-model-id"),
                    ("smart", "smart-model-id"),
                ]
                sid = created.session_id
                await conn.prompt(session_id=sid, prompt=[text("one")])
                assert model.requests[-1]["model"] == "fast-model-id"

                changed = await conn.set_config_option(config_id="model", session_id=sid, value="smart")
                assert model_option(changed.config_options).current_value == "smart"
                await conn.prompt(session_id=sid, prompt=[text("two")])
                assert model.requests[-1]["model"] == "smart-model-id"
                assert [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "user"] == ["one", "two"]

                with pytest.raises(RequestError) as refused:
                    await conn.set_config_option(config_id="model", session_id=sid, value="no-such-model")
                assert refused.value.code == -32602

            async with hosted_crow(RecordingClient(), env, "--agent", CORE_AGENT) as (conn, _):
                loaded = await conn.load_session(cwd=str(crow_home), session_id=sid, mcp_servers=[])
                assert model_option(loaded.config_options).current_value == "smart"
                await conn.prompt(session_id=sid, prompt=[text("three")])
                assert model.requests[-1]["model"] == "smart-model-id"


@pytest.mark.anyio
async def test_cancel_also_stops_a_prompt_waiting_behind_the_running_one(crow_home, monkeypatch):
    """In process, so the test knows the second prompt is queued (every other task is blocked) before it cancels."""
    model = FunctionModel(default=Reply(text="slow " * 40, chunks=40, delay=0.1))
    client = RecordingClient()
    with anyio.fail_after(60):
        async with crow(crow_home, model, monkeypatch, client, agent=CORE_AGENT) as conn:
            sid = (await conn.new_session(cwd=str(crow_home), mcp_servers=[])).session_id
            results: dict[str, str] = {}

            async def ask(name: str) -> None:
                results[name] = (await conn.prompt(session_id=sid, prompt=[text(name)])).stop_reason

            async with anyio.create_task_group() as group:
                group.start_soon(ask, "first")
                await client.wait_for(lambda c: c.of("agent_message_chunk"))
                group.start_soon(ask, "second")
                await anyio.wait_all_tasks_blocked()  # the second prompt waits for the first's turn
                await conn.cancel(session_id=sid)
            assert results == {"first": "cancelled", "second": "cancelled"}
            assert len(model.requests) == 1, "the queued prompt never reached the model"
            model.add(Reply(text="fresh"))
            assert (await conn.prompt(session_id=sid, prompt=[text("third")])).stop_reason == "end_turn"


@pytest.mark.anyio
async def test_additional_directories_follow_the_editor_on_load(crow_home, tmp_path):
    from support.helpers import in_process

    from crow_acp.acp.agent import AcpAgent
    from crow_acp.config import load_config

    first, second = str(tmp_path / "first"), str(tmp_path / "second")
    async with in_process(AcpAgent(load_config(home=crow_home))) as agent:
        sid = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[], additional_directories=[first])).session_id
        assert agent.sessions[sid].additional_directories == [first]
        await agent.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[], additional_directories=[second])
        assert agent.sessions[sid].additional_directories == [second]
        await agent.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])  # none given: the stored ones
        assert agent.sessions[sid].additional_directories == [second]
    assert (await agent.store.get(sid)).data["additional_directories"] == [second]
