"""Session titles from the model: after the first turn, in the background, with the prompt as fallback."""

from __future__ import annotations

import asyncio
import threading

import anyio
import pytest
from support.helpers import CORE_AGENT, RecordingClient, crow_env, text, write_config
from support.hosted import hosted_crow

from crow_acp.acp.prompt.titles import clean_title
from crow_acp.testing import Fault, Reply, ScriptedModel

pytestmark = pytest.mark.anyio
PROMPT = "the parser fails on empty input, please fix it"


def titles(client: RecordingClient) -> list[str]:
    return [u.title for u in client.of("session_info_update")]


async def test_the_model_names_the_session_without_delaying_the_turn(crow_home, tmp_path):
    write_config(
        crow_home,
        'model = "main"\n[models.main]\nmodel = "main-id"\n[models.namer]\nmodel = "namer-id"\n'
        '[titles]\nmodel = "namer"\n',
    )
    release = threading.Event()

    async def title(request: dict) -> Reply:
        await asyncio.to_thread(release.wait, 30)  # held until the turn's response has arrived
        return Reply(text='Title: "Fixing the empty-input parser bug."\n\nmore text')

    client = RecordingClient()
    async with ScriptedModel(default=Reply(text="done")) as model:
        model.titles = title
        with anyio.fail_after(60):
            async with hosted_crow(client, crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as (conn, _):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                response = await conn.prompt(session_id=sid, prompt=[text(PROMPT)])
                assert response.stop_reason == "end_turn" and titles(client) == [PROMPT]
                release.set()
                await client.wait_for(lambda c: len(titles(c)) == 2)
                assert titles(client)[1] == "Fixing the empty-input parser bug"
                listed = (await conn.list_sessions(cwd=str(tmp_path))).sessions
                assert listed[0].title == "Fixing the empty-input parser bug"
                await conn.prompt(session_id=sid, prompt=[text("second prompt")])
    [asked] = model.title_requests  # once, after the first turn only, on the configured profile
    assert asked["model"] == "namer-id" and asked["messages"][-1]["content"] == PROMPT
    assert titles(client) == [PROMPT, "Fixing the empty-input parser bug"]


async def test_a_failed_title_call_keeps_the_prompt_and_titles_can_be_turned_off(crow_home, tmp_path):
    for config, expect_call in (("", True), ("[titles]\nenabled = false\n", False)):
        write_config(crow_home, config)
        client = RecordingClient()
        async with ScriptedModel(default=Reply(text="done")) as model:
            model.titles = Fault(400, "no")
            with anyio.fail_after(60):
                async with hosted_crow(client, crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as (conn, _):
                    sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                    await conn.prompt(session_id=sid, prompt=[text(PROMPT)])
                    await conn.prompt(session_id=sid, prompt=[text("again")])
                    while expect_call and not model.title_requests:  # noqa: ASYNC110 (another thread appends)
                        await anyio.sleep(0.05)
        assert bool(model.title_requests) == expect_call
        assert titles(client) == [PROMPT]


def test_clean_title():
    assert clean_title("  **Refactor the store**  ") == "Refactor the store"
    assert clean_title("Name: `Fix CI`.") == "Fix CI"
    assert clean_title("\n\n") is None and clean_title('""') is None
    assert clean_title("bad\x00title") is None
    long = clean_title("word " * 40)
    assert long is not None and len(long) <= 60 and long.endswith("…")


def test_a_title_reply_of_any_shape_gives_text_or_nothing():
    """A side call's reply is the endpoint's JSON, untyped: any shape but a first choice's string content is ""."""
    from crow_acp.model.client import _reply_text

    good = {"choices": [{"message": {"content": "Fix the parser"}}]}
    assert _reply_text(good) == "Fix the parser"
    hostile = [None, [], "x", {}, {"choices": None}, {"choices": []}, {"choices": ["x"]}, {"choices": [{}]},
               {"choices": [{"message": "m"}]}, {"choices": [{"message": {"content": 7}}]},
               {"choices": [{"message": {"content": None}}]}]  # fmt: skip
    assert [_reply_text(reply) for reply in hostile] == [""] * len(hostile)
