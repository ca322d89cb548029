"""Whose sessions: two `crow serve --users` processes on ONE PostgreSQL, alice and bob each with their own
token, over HTTP and WebSocket. Bob cannot see or touch alice's sessions, even knowing the id, its prefix,
or her fork's id: every method answers exactly as for an id that does not exist. An admin sees all. A share
grants what it says: read (load, fork) or full, and taken back it grants nothing."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import uuid
from typing import Any

import anyio
import pytest
from acp import RequestError
from acp.http.client import AcpHttpStatusError
from support.helpers import CORE_AGENT, RecordingClient, crow_env, text
from support.serve_support import crow_serve, over_http, over_ws

from crow_acp.store import Caller
from crow_acp.store.postgres import PostgresStore
from crow_acp.testing import Reply, ScriptedModel

pytestmark = pytest.mark.anyio
ID = "<id>"


def add_user(env: dict[str, str], name: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "crow", "serve", "user", "add", name, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def sessions_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crow", "sessions", *args], env=env, capture_output=True, text=True, timeout=60
    )


@dataclasses.dataclass
class Team:
    env: dict[str, str]
    users: str
    shared: str
    tokens: dict[str, str]
    url: str


@pytest.fixture
def team(crow_home, tmp_path, postgres):
    shared = tmp_path / "shared"
    shared.mkdir()
    url = postgres.new_database()
    env = crow_env(crow_home, "http://127.0.0.1:9/v1", CROW_DATABASE_URL=url)
    tokens = {name: add_user(env, name, "--root", str(shared)) for name in ("alice", "bob")}
    tokens["root"] = add_user(env, "root", "--root", str(shared), "--admin")
    return Team(env, str(crow_home / "serve-users.toml"), str(shared.resolve()), tokens, url)


def normal(error: RequestError | None, session_id: str) -> Any:
    """An answer with the session id taken out, so two ids' answers compare."""
    if error is None:
        return "ok"
    return (error.code, str(error).replace(session_id, ID), repr(error.data).replace(session_id, ID))


async def answer(call: Any, session_id: str) -> Any:
    try:
        await call
    except RequestError as error:
        return normal(error, session_id)
    except AcpHttpStatusError as refused:  # over HTTP the SDK's server answers a session it does not serve with 404
        return ("HTTP", refused.status_code)
    return "ok"


def delete(conn: Any, session_id: str) -> Any:
    return conn._conn.send_request("session/delete", {"sessionId": session_id})  # the SDK client has no method


def share(conn: Any, session_id: str, user: str, access: str) -> Any:
    return conn.ext_method("crow/share", {"sessionId": session_id, "user": user, "access": access})


async def every_method(conn: Any, session_id: str, cwd: str) -> dict[str, Any]:
    """What each session method answers for `session_id`, the id taken out of the answers."""
    calls = {
        "load": lambda: conn.load_session(cwd=cwd, session_id=session_id, mcp_servers=[]),
        "resume": lambda: conn.resume_session(cwd=cwd, session_id=session_id, mcp_servers=[]),
        "fork": lambda: conn.fork_session(cwd=cwd, session_id=session_id, mcp_servers=[]),
        "prompt": lambda: conn.prompt(session_id=session_id, prompt=[text("let me in")]),
        "set_mode": lambda: conn.set_session_mode(session_id=session_id, mode_id="ask"),
        "set_option": lambda: conn.set_config_option(session_id=session_id, config_id="mode", value="ask"),
        "share": lambda: share(conn, session_id, "bob", "full"),
        "cancel": lambda: conn.cancel(session_id=session_id),
        "delete": lambda: delete(conn, session_id),
    }
    return {name: await answer(call(), session_id) for name, call in calls.items()}


async def listed(conn: Any) -> set[str]:
    return {s.session_id for s in (await conn.list_sessions()).sessions}


async def test_bob_cannot_see_or_touch_alices_sessions_across_two_servers(team):
    cwd, tokens = team.shared, team.tokens
    async with ScriptedModel(default=lambda request: Reply(text="fine")) as model:
        env = {**team.env, "OPENAI_BASE_URL": model.base_url}
        args = ("--users", team.users, "--agent", CORE_AGENT)
        async with (
            crow_serve(env, *args, token=None, roots=(cwd,)) as one,
            crow_serve(env, *args, token=None, roots=(cwd,)) as two,
        ):
            with anyio.fail_after(240):
                async with over_http(RecordingClient(), one, tokens["alice"]) as alice:
                    sid = (await alice.new_session(cwd=cwd, mcp_servers=[])).session_id
                    assert (await alice.prompt(session_id=sid, prompt=[text("secret plan")])).stop_reason == "end_turn"
                    fork = (await alice.fork_session(cwd=cwd, session_id=sid, mcp_servers=[])).session_id
                    assert (await alice.prompt(session_id=fork, prompt=[text("forked plan")])).stop_reason == "end_turn"
                    assert await listed(alice) == {sid, fork}
                # The other server, WebSocket, and the first, HTTP: bob's answers are an unknown id's.
                for served, over in ((two, over_ws), (one, over_http)):
                    async with over(RecordingClient(), served, tokens["bob"]) as bob:
                        unknown = await every_method(bob, uuid.uuid4().hex, cwd)
                        assert unknown["load"][0] == -32002 and unknown["delete"] == "ok", unknown
                        for target in (sid, fork):
                            assert await every_method(bob, target, cwd) == unknown
                        assert await listed(bob) == set()
                store = PostgresStore(team.url)
                try:
                    bob_sees = Caller("bob")
                    assert await store.find_prefix(sid[:6], visible_to=bob_sees) == []
                    assert await store.list_sessions(visible_to=bob_sees) == []
                    assert [r.id for r in await store.find_prefix(sid[:8], visible_to=Caller("alice"))] == [sid]
                finally:
                    await store.close()
                # Nothing of bob's attempts reached alice's sessions: both still there, history intact.
                replay = RecordingClient()
                async with over_ws(replay, two, tokens["alice"]) as alice:
                    await alice.load_session(cwd=cwd, session_id=sid, mcp_servers=[])
                    assert [u.content.text for u in replay.of("user_message_chunk")] == ["secret plan"]
                    assert await listed(alice) == {sid, fork}
                # The admin sees and may use every session.
                async with over_http(RecordingClient(), one, tokens["root"]) as root:
                    assert await listed(root) == {sid, fork}
                    await root.load_session(cwd=cwd, session_id=fork, mcp_servers=[])
                    assert (await root.prompt(session_id=fork, prompt=[text("admin here")])).stop_reason == "end_turn"
    assert "let me in" not in str(model.requests), "none of bob's prompts reached the model"


async def test_a_share_grants_exactly_what_it_says(team):
    cwd, tokens = team.shared, team.tokens
    async with ScriptedModel(default=lambda request: Reply(text="fine")) as model:
        env = {**team.env, "OPENAI_BASE_URL": model.base_url}
        args = ("--users", team.users, "--agent", CORE_AGENT)
        async with (
            crow_serve(env, *args, token=None, roots=(cwd,)) as one,
            crow_serve(env, *args, token=None, roots=(cwd,)) as two,
        ):
            with anyio.fail_after(240):
                async with over_http(RecordingClient(), one, tokens["alice"]) as alice:
                    sid = (await alice.new_session(cwd=cwd, mcp_servers=[])).session_id
                    assert (await alice.prompt(session_id=sid, prompt=[text("shared work")])).stop_reason == "end_turn"
                    assert await share(alice, sid, "bob", "read") == {"sessionId": sid, "user": "bob", "access": "read"}
                replay = RecordingClient()
                async with over_ws(replay, two, tokens["bob"]) as bob:
                    assert await listed(bob) == {sid}
                    await bob.load_session(cwd=cwd, session_id=sid, mcp_servers=[])
                    assert [u.content.text for u in replay.of("user_message_chunk")] == ["shared work"]
                    answers = await every_method(bob, sid, cwd)
                    read_only = answers["prompt"]
                    assert read_only[0] == -32602 and "read-only" in read_only[1] + read_only[2], read_only
                    assert {k: v for k, v in answers.items() if v == read_only} == {
                        name: read_only for name in ("prompt", "set_mode", "set_option", "delete")
                    }
                    assert answers["load"] == answers["resume"] == answers["fork"] == "ok", answers
                    assert "only the owner" in answers["share"][2], "a reader may not share it on"
                    # A reader's fork: alice's, as its source is, and bob's to continue.
                    fork = (await bob.fork_session(cwd=cwd, session_id=sid, mcp_servers=[])).session_id
                    assert (await bob.prompt(session_id=fork, prompt=[text("my branch")])).stop_reason == "end_turn"
                async with over_http(RecordingClient(), one, tokens["alice"]) as alice:
                    assert sid in await listed(alice) and fork in await listed(alice)
                    await share(alice, sid, "bob", "full")
                async with over_ws(RecordingClient(), two, tokens["bob"]) as bob:
                    await bob.resume_session(cwd=cwd, session_id=sid, mcp_servers=[])
                    assert (await bob.prompt(session_id=sid, prompt=[text("full now")])).stop_reason == "end_turn"
                    await bob.set_session_mode(session_id=sid, mode_id="ask")
                    assert "only the owner" in (await answer(share(bob, sid, "carol", "read"), sid))[2]
                # Taken back with `crow sessions unshare`, written straight to the store: bob's open session
                # refuses his next prompt, and the session is gone from his view.
                async with over_ws(RecordingClient(), two, tokens["bob"]) as bob:
                    await bob.resume_session(cwd=cwd, session_id=sid, mcp_servers=[])
                    done = sessions_cli(team.env, "unshare", sid, "bob")
                    assert done.returncode == 0 and "no longer shared with bob" in done.stdout, done.stderr
                    unknown = await every_method(bob, uuid.uuid4().hex, cwd)
                    assert (await every_method(bob, sid, cwd))["prompt"] == unknown["prompt"]
                    assert sid not in await listed(bob) and fork in await listed(bob)
                # `crow sessions share --read-only` gives read access back.
                done = sessions_cli(team.env, "share", sid[:8], "bob", "--read-only")
                assert done.returncode == 0 and f"session {sid} (of alice) shared with bob: read" in done.stdout
                async with over_http(RecordingClient(), one, tokens["bob"]) as bob:
                    assert {sid, fork} <= await listed(bob)
                    await bob.load_session(cwd=cwd, session_id=sid, mcp_servers=[])
                    assert (await answer(bob.prompt(session_id=sid, prompt=[text("x")]), sid))[0] == -32602
    prompts = [m["content"] for r in model.requests for m in r["messages"] if m["role"] == "user"]
    assert "full now" in prompts and "my branch" in prompts and "x" not in prompts and "let me in" not in prompts


def test_crow_sessions_share_refuses_bad_input_in_one_line(team):
    env = team.env
    for args, words in (
        (("share", "abcdef"), "a user name"),
        (("share", "abcdef", "../x"), "a user name"),
        (("unshare", "abcdef", "bob", "--read-only"), "--read-only is for"),
        (("show", "abcdef", "bob"), "not show"),
        (("share", "abcdef", "bob"), "no stored session"),
    ):
        done = sessions_cli(env, *args)
        assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)


def sqlite_team(crow_home, tmp_path) -> Team:
    shared = tmp_path / "shared"
    shared.mkdir()
    env = crow_env(crow_home, "http://127.0.0.1:9/v1")
    tokens = {name: add_user(env, name, "--root", str(shared)) for name in ("alice", "bob")}
    tokens["root"] = add_user(env, "root", "--root", str(shared), "--admin")
    return Team(env, str(crow_home / "serve-users.toml"), str(shared.resolve()), tokens, "")


async def records(home) -> list[Any]:
    from crow_acp.store.sqlite import SqliteStore

    store = SqliteStore(home / "sessions.db")
    try:
        return [await store.get(r[0]) for r in await _ids(store)]
    finally:
        await store.close()


async def _ids(store: Any) -> list[tuple[str]]:
    return await store.workers.all[0].call(lambda db: db.execute("SELECT id FROM sessions").fetchall())


async def test_a_graphs_member_sessions_are_the_owners_on_sqlite(crow_home, tmp_path):
    from support.multi_support import AGENTS, multi_env, scripted

    team = sqlite_team(crow_home, tmp_path)
    cwd, tokens = team.shared, team.tokens
    answers = {name: (lambda request, name=name: Reply(text=f"{name.upper()}-DONE")) for name in AGENTS_NAMES}
    async with scripted(**answers) as models:
        env = multi_env(crow_home, models)
        async with crow_serve(
            env, "--users", team.users, "--agent", f"{AGENTS}:build", token=None, roots=(cwd,)
        ) as one:
            with anyio.fail_after(180):
                async with over_http(RecordingClient(), one, tokens["alice"]) as alice:
                    sid = (await alice.new_session(cwd=cwd, mcp_servers=[])).session_id
                    assert (await alice.prompt(session_id=sid, prompt=[text("write add")])).stop_reason == "end_turn"
                stored = {r.id: r for r in await records(crow_home)}
                members = stored[sid].data["context"]["graph_sessions"]
                assert set(members) == set(AGENTS_NAMES) and {stored[m].owner for m in members.values()} == {"alice"}
                children = [m for m in members.values() if m != sid]
                async with over_ws(RecordingClient(), one, tokens["bob"]) as bob:
                    unknown = await every_method(bob, uuid.uuid4().hex, cwd)
                    for target in (sid, *children):
                        assert await every_method(bob, target, cwd) == unknown
                    assert await listed(bob) == set()
                async with over_ws(RecordingClient(), one, tokens["root"]) as root:
                    assert await listed(root) == {sid}
                    await root.load_session(cwd=cwd, session_id=sid, mcp_servers=[])
                    assert (await root.prompt(session_id=sid, prompt=[text("again")])).stop_reason == "end_turn"
                after = {r.id: r for r in await records(crow_home)}
                assert set(after) == set(stored) and {r.owner for r in after.values()} == {"alice"}, (
                    "the admin's turn made nothing of the admin's"
                )


AGENTS_NAMES = ("coder", "reviewer", "tester")


async def test_a_delegates_helper_session_is_the_parents_owners(crow_home, tmp_path):
    from support.matrix_support import last_prompt

    from crow_acp.testing import ToolCall

    team = sqlite_team(crow_home, tmp_path)
    (crow_home / "config.toml").write_text('[delegate]\nenabled = true\nagents = ["crow"]\n')
    cwd, tokens = team.shared, team.tokens

    def respond(request: dict) -> Reply:
        prompt = last_prompt(request)
        if prompt == "TASK-H":
            return Reply(text="HELPER-DONE")
        if any(m["role"] == "tool" for m in request["messages"]):
            return Reply(text="PARENT-DONE")
        return Reply(tool_calls=[ToolCall("delegate", {"task": "TASK-H"}, id="call_h")])

    async with ScriptedModel(default=respond) as model:
        env = {**team.env, "OPENAI_BASE_URL": model.base_url}
        async with crow_serve(env, "--users", team.users, token=None, roots=(cwd,)) as one:
            with anyio.fail_after(180):
                async with over_ws(RecordingClient(), one, tokens["alice"]) as alice:
                    sid = (await alice.new_session(cwd=cwd, mcp_servers=[])).session_id
                    assert (await alice.prompt(session_id=sid, prompt=[text("go")])).stop_reason == "end_turn"
                helpers = [r for r in await records(crow_home) if r.id != sid]
                assert [r.data.get("agent") for r in helpers] == ["crow-helper"]
                assert helpers[0].owner == "alice", "the helper's session is the parent's owner's"
                async with over_http(RecordingClient(), one, tokens["bob"]) as bob:
                    unknown = await every_method(bob, uuid.uuid4().hex, cwd)
                    assert await every_method(bob, helpers[0].id, cwd) == unknown
    assert "HELPER-DONE" in str(model.requests), "the helper ran"
