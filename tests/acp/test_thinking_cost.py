"""The thinking-level picker and the session's cost, over ACP as an editor sees them."""

from __future__ import annotations

import anyio
import pytest
from acp import RequestError
from support.helpers import CORE_AGENT, RecordingClient, crow_env, text, write_config
from support.hosted import hosted_crow

from crow_acp.testing import Reply, ScriptedModel

pytestmark = pytest.mark.anyio

PROFILES = """
model = "thinker"
[models.thinker]
model = "thinker-id"
reasoning = true
reasoning_effort = "low"
context_window = 64000
input_price = 2.0
output_price = 8.0
currency = "EUR"
[models.plain]
model = "plain-id"
"""


def options(listed) -> dict:
    return {(o.root if hasattr(o, "root") else o).id: (o.root if hasattr(o, "root") else o) for o in listed}


async def test_thinking_level_is_offered_sent_and_remembered(crow_home):
    write_config(crow_home, PROFILES)
    with ScriptedModel(default=Reply(text="ok")) as model:
        env = crow_env(crow_home, model.base_url)
        with anyio.fail_after(60):
            async with hosted_crow(RecordingClient(), env, "--agent", CORE_AGENT) as (conn, _):
                created = await conn.new_session(cwd=str(crow_home), mcp_servers=[])
                sid, thought = created.session_id, options(created.config_options)["thought_level"]
                assert (thought.category, thought.current_value) == ("thought_level", "low")
                assert [o.value for o in thought.options] == ["low", "medium", "high"]
                await conn.prompt(session_id=sid, prompt=[text("one")])
                assert model.requests[-1]["reasoning_effort"] == "low"

                changed = await conn.set_config_option(config_id="thought_level", session_id=sid, value="high")
                assert options(changed.config_options)["thought_level"].current_value == "high"
                await conn.prompt(session_id=sid, prompt=[text("two")])
                assert model.requests[-1]["reasoning_effort"] == "high"
                for bad in ("extreme", ""):
                    with pytest.raises(RequestError) as refused:
                        await conn.set_config_option(config_id="thought_level", session_id=sid, value=bad)
                    assert refused.value.code == -32602

                # A profile without reasoning: no picker, no effort sent, and no way to set one.
                plain = await conn.set_config_option(config_id="model", session_id=sid, value="plain")
                assert set(options(plain.config_options)) == {"model", "mode"}
                await conn.prompt(session_id=sid, prompt=[text("three")])
                assert "reasoning_effort" not in model.requests[-1]
                with pytest.raises(RequestError):
                    await conn.set_config_option(config_id="thought_level", session_id=sid, value="low")
                await conn.set_config_option(config_id="model", session_id=sid, value="thinker")

            async with hosted_crow(RecordingClient(), env, "--agent", CORE_AGENT) as (conn, _):
                loaded = await conn.load_session(cwd=str(crow_home), session_id=sid, mcp_servers=[])
                assert options(loaded.config_options)["thought_level"].current_value == "high"
                await conn.prompt(session_id=sid, prompt=[text("four")])
                assert model.requests[-1]["reasoning_effort"] == "high"


async def test_usage_update_carries_cost_and_context_size(crow_home):
    write_config(crow_home, PROFILES)
    usage = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}
    script = [Reply(text="a", usage=usage), Reply(text="b", usage=usage), Reply(text="c", usage=usage)]
    client = RecordingClient()
    with ScriptedModel(script) as model:
        env = crow_env(crow_home, model.base_url)
        with anyio.fail_after(60):
            async with hosted_crow(client, env, "--agent", CORE_AGENT) as (conn, _):
                sid = (await conn.new_session(cwd=str(crow_home), mcp_servers=[])).session_id
                await conn.prompt(session_id=sid, prompt=[text("one")])
                await conn.prompt(session_id=sid, prompt=[text("two")])
                first, second = client.of("usage_update")
                # (1000 * 2.0 + 500 * 8.0) per million = 0.006 EUR per call, summed over the session.
                assert (first.used, first.size) == (1500, 64000)
                assert (first.cost.amount, first.cost.currency) == (pytest.approx(0.006), "EUR")
                assert second.cost.amount == pytest.approx(0.012)
                # The unpriced profile reports its usage without a cost.
                await conn.set_config_option(config_id="model", session_id=sid, value="plain")
                await conn.prompt(session_id=sid, prompt=[text("three")])
                third = client.of("usage_update")[-1]
                assert third.cost is None and third.size == 128000
