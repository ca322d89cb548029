"""`crow serve --agent` serving a MultiAgent (a chain of presets) to the SDK's HTTP and WebSocket clients."""

from __future__ import annotations

import anyio
import pytest
from support.helpers import RecordingClient, text
from support.multi_support import AGENTS, all_text, last_user, multi_env, scripted
from support.serve_support import crow_serve, over_http, over_ws

from crow_acp.testing import Reply, ToolCall

pytestmark = pytest.mark.anyio


def chain_scripts() -> dict[str, list[Reply]]:
    return {
        "coder": [
            Reply(text="Looking up.", tool_calls=[ToolCall("lookup", {"key": "k1"}, id="call_1")]),
            Reply(text="CODE-DONE"),
        ],
        "reviewer": [Reply(text="REVIEW-OK")],
        "tester": [Reply(text="TESTS-PASS")],
    }


def handoffs(client: RecordingClient) -> list[str]:
    return list(dict.fromkeys(u.title for u in client.of("tool_call") if "→" in u.title))


async def test_a_chain_runs_through_crow_serve_and_loads_on_a_second_connection(crow_home, tmp_path):
    async with scripted(**chain_scripts()) as models:
        env = multi_env(crow_home, models)
        async with crow_serve(env, "--agent", f"{AGENTS}:build") as served:
            first = RecordingClient()
            with anyio.fail_after(90):
                async with over_http(first, served) as conn:
                    sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                    assert (await conn.prompt(session_id=sid, prompt=[text("write add")])).stop_reason == "end_turn"
                # The coder's tool ran on the server and its result went back to the coder's model.
                assert "TOOL-OUTPUT-k1" in all_text(models["coder"].requests[1])
                assert last_user(models["reviewer"].requests[0]) == "CODE-DONE"
                assert last_user(models["tester"].requests[0]) == "REVIEW-OK"
                assert [u.status for u in first.tool_updates("call_1") if u.status][-1] == "completed"
                assert handoffs(first) == ["coder → reviewer", "reviewer → tester"]
                said = first.text()
                assert said.index("CODE-DONE") < said.index("REVIEW-OK") < said.index("TESTS-PASS")

                for name, reply in (("coder", "CODE-2"), ("reviewer", "REVIEW-2"), ("tester", "TESTS-2")):
                    models[name].add(Reply(text=reply))
                second = RecordingClient()
                async with over_http(second, served) as conn:  # another connection: another graph, same store
                    await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                    replayed = list(second.updates)
                    assert (await conn.prompt(session_id=sid, prompt=[text("more")])).stop_reason == "end_turn"
    assert [u.content.text for u in replayed if u.session_update == "user_message_chunk"] == ["write add"]
    assert [(u.title, u.status) for u in replayed if u.session_update == "tool_call" and "→" in u.title] == [
        ("coder → reviewer", "completed"),
        ("reviewer → tester", "completed"),
    ]
    said = "".join(u.content.text for u in replayed if u.session_update == "agent_message_chunk")
    assert said.index("CODE-DONE") < said.index("REVIEW-OK") < said.index("TESTS-PASS")
    # Every member's history came back from the store: the reviewer's model sees its first turn again.
    assert last_user(models["reviewer"].requests[-1]) == "CODE-2"
    assert "REVIEW-OK" in all_text(models["reviewer"].requests[-1])


async def test_an_instance_spec_gives_each_connection_its_own_graph(crow_home, tmp_path):
    spec = f"{AGENTS.parent / 'serve_agents.py'}:team"

    def answer(name: str):
        return lambda request: Reply(text=f"{name}:{last_user(request)}")

    async with scripted(coder=answer("c"), reviewer=answer("r"), tester=answer("t")) as models:
        async with crow_serve(multi_env(crow_home, models), "--agent", spec) as served:
            a, b = RecordingClient(), RecordingClient()
            with anyio.fail_after(90):
                async with over_http(a, served) as one, over_ws(b, served) as two:
                    sa = (await one.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                    sb = (await two.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id

                    async def ask(conn, sid: str, words: str) -> None:
                        assert (await conn.prompt(session_id=sid, prompt=[text(words)])).stop_reason == "end_turn"

                    async with anyio.create_task_group() as group:
                        group.start_soon(ask, one, sa, "from-a")
                        group.start_soon(ask, two, sb, "from-b")
    # Each editor saw its own chain only: a shared instance would send one connection's updates to the other.
    assert "c:from-a" in a.text() and "t:r:c:from-a" in a.text() and "from-b" not in a.text()
    assert "c:from-b" in b.text() and "t:r:c:from-b" in b.text() and "from-a" not in b.text()
