"""A MultiAgent session can do what an AcpAgent session can: be forked, and be titled by the model.

In process: the graphs of tests/agents/multi_agents.py with one FunctionModel per agent, and a
RecordingClient as the editor (multi_support.in_process).
"""

from __future__ import annotations

import re

import anyio
import pytest
from support.helpers import RecordingClient, text
from support.multi_support import functions, in_process, last_user, scripted, serve

from crow_acp.testing import Reply

pytestmark = pytest.mark.anyio


def user_texts(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


async def test_a_forked_graph_keeps_every_members_history_and_its_own_blackboard(crow_home, tmp_path, monkeypatch):
    models = functions(coder=Reply(text="CODE"), reviewer=Reply(text="LGTM"), tester=Reply(text="PASS"))
    client = RecordingClient()
    async with in_process(client, "build", crow_home, models, monkeypatch) as multi:
        with anyio.fail_after(60):
            sid = (await multi.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            assert (await multi.prompt(session_id=sid, prompt=[text("write add")])).stop_reason == "end_turn"
            forked = await multi.fork_session(session_id=sid, cwd=str(tmp_path), mcp_servers=[])
            fork = forked.session_id
            assert fork != sid and forked.config_options  # the entry's options, as on session/new
            old, new = multi._graphs[sid], multi._graphs[fork]
            assert set(new.sessions) == set(old.sessions) == {"coder", "reviewer", "tester"}
            assert not set(new.sessions.values()) & set(old.sessions.values())  # a session of its own on every member
            assert new.blackboard.get("blackboard") == {"coder_turns": 1}  # the board as it stood, copied
            new.access("tester").set_context("blackboard", {"coder_turns": 1, "forked": True})
            assert new.access("coder").get_context("blackboard") == {"coder_turns": 1, "forked": True}
            assert old.access("coder").get_context("blackboard") == {"coder_turns": 1}  # the original is untouched
            assert (await multi.prompt(session_id=fork, prompt=[text("now subtract")])).stop_reason == "end_turn"
            listed = {s.session_id: s.title for s in (await multi.list_sessions(cwd=str(tmp_path))).sessions}
    assert listed == {sid: "write add", fork: "write add (fork)"}
    coder = models["coder"].requests
    assert user_texts(coder[-1]) == ["write add", "now subtract"]  # the fork's coder saw the history so far
    assert last_user(models["reviewer"].requests[-1]) == "CODE" and len(models["reviewer"].requests) == 2
    assert len(models["tester"].requests) == 2  # each member of the fork worked once more
    # The model names the graph's session (the entry's); the members' sessions nobody sees get no side call.
    assert len(models["coder"].title_requests) == 1
    assert models["reviewer"].title_requests == models["tester"].title_requests == []


async def test_an_unknown_session_cannot_be_forked(crow_home, tmp_path, monkeypatch):
    from acp import RequestError

    models = functions(coder=Reply(text="x"), reviewer=Reply(text="y"), tester=Reply(text="z"))
    async with in_process(RecordingClient(), "build", crow_home, models, monkeypatch) as multi:
        with anyio.fail_after(30), pytest.raises(RequestError):
            await multi.fork_session(session_id="no-such-session", cwd=str(tmp_path), mcp_servers=[])
        assert multi._graphs == {}


async def test_a_driver_pattern_gets_the_models_title(crow_home, tmp_path, monkeypatch):
    """The supervisor's entry (the router) never gets the user's text as a turn; the session is
    still titled by the prompt at once, then by the model."""
    models = functions(router=Reply(text="DONE"), emma=Reply(text="x"), bob=Reply(text="y"), alex=Reply(text="z"))
    models["router"].titles = Reply(text="Title: Todo app plan")
    client = RecordingClient()
    async with in_process(client, "build_supervisor", crow_home, models, monkeypatch) as multi:
        with anyio.fail_after(60):
            sid = (await multi.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            assert (await multi.prompt(session_id=sid, prompt=[text("build a todo app")])).stop_reason == "end_turn"
            await client.wait_for(lambda c: len(c.of("session_info_update")) == 2)
            listed = (await multi.list_sessions(cwd=str(tmp_path))).sessions
    assert [u.title for u in client.of("session_info_update")] == ["build a todo app", "Todo app plan"]
    assert [s.title for s in listed] == ["Todo app plan"]
    [asked] = models["router"].title_requests
    assert asked["messages"][-1]["content"] == "build a todo app"


async def test_over_stdio_a_graph_forks_and_the_fork_loads_with_every_members_history(crow_home, tmp_path):
    scripts = {name: Reply(text=f"{name.upper()} says so") for name in ("coder", "reviewer", "tester")}
    client = RecordingClient()
    async with scripted(**scripts) as models, serve(client, "build", crow_home, models) as conn:
        with anyio.fail_after(90):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[text("write add")])
            fork = (await conn.fork_session(session_id=sid, cwd=str(tmp_path), mcp_servers=[])).session_id
            assert (await conn.prompt(session_id=fork, prompt=[text("now subtract")])).stop_reason == "end_turn"
            assert user_texts(models["coder"].requests[-1]) == ["write add", "now subtract"]
            before = len(client.updates)
            await conn.load_session(cwd=str(tmp_path), session_id=fork, mcp_servers=[])
    replayed = client.updates[before:]
    said = re.findall(
        r"(CODER|REVIEWER|TESTER) says so",
        "".join(u.content.text for u in replayed if u.session_update == "agent_message_chunk"),
    )
    # Every member's history, before and after the fork. After it, in the order it happened; the copied
    # part replays member by member (each member's copy is its own transaction: see fork_session).
    assert sorted(said[:3]) == ["CODER", "REVIEWER", "TESTER"] and said[3:] == ["CODER", "REVIEWER", "TESTER"]
