"""session/fork over ACP: the fork starts with the history so far, then each goes its own way."""

from __future__ import annotations

import anyio
import pytest
from acp import RequestError
from support.helpers import CORE_AGENT, RecordingClient, crow_env, text
from support.hosted import hosted_crow

from crow_acp.testing import Reply, ScriptedModel

pytestmark = pytest.mark.anyio


def users(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


async def test_fork_copies_the_history_and_is_independent_afterwards(crow_home, tmp_path):
    client = RecordingClient()
    async with ScriptedModel(default=Reply(text="ok")) as model:
        env = crow_env(crow_home, model.base_url)
        with anyio.fail_after(60):
            async with hosted_crow(client, env, "--agent", CORE_AGENT) as (conn, _):
                init = await conn.initialize(protocol_version=1)
                assert init.agent_capabilities.session_capabilities.fork is not None
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                await conn.prompt(session_id=sid, prompt=[text("shared start")])

                forked = await conn.fork_session(session_id=sid, cwd=str(tmp_path), mcp_servers=[])
                fork = forked.session_id
                assert fork != sid and forked.config_options
                await conn.prompt(session_id=fork, prompt=[text("only in the fork")])
                assert users(model.requests[-1]) == ["shared start", "only in the fork"]
                await conn.prompt(session_id=sid, prompt=[text("only in the original")])
                assert users(model.requests[-1]) == ["shared start", "only in the original"]

                listed = {s.session_id: s for s in (await conn.list_sessions(cwd=str(tmp_path))).sessions}
                assert set(listed) == {sid, fork}
                assert listed[fork].title == "shared start (fork)"

                with pytest.raises(RequestError) as unknown:
                    await conn.fork_session(session_id="no-such-session", cwd=str(tmp_path), mcp_servers=[])
                assert unknown.value.code == -32002

            replay = RecordingClient()
            async with hosted_crow(replay, env, "--agent", CORE_AGENT) as (conn, _):
                await conn.load_session(cwd=str(tmp_path), session_id=fork, mcp_servers=[])
                shown = [u.content.text for u in replay.of("user_message_chunk")]
                assert shown == ["shared start", "only in the fork"]
