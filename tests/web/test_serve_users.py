"""`crow serve --users`: two engineers, each with their own token, confined to their own checkouts; one
removed while connected; a guesser answered 401, then 429."""

from __future__ import annotations

import dataclasses
import os
import stat
import subprocess
import sys
from typing import Any

import anyio
import httpx
import pytest
from acp import RequestError
from support.helpers import RecordingClient, crow_env
from support.serve_raw import RawHttp, upgrade_status
from support.serve_support import crow_serve, over_http, over_ws
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

pytestmark = pytest.mark.anyio
NO_MODEL = "http://127.0.0.1:9/v1"


def user(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crow", "serve", "user", *args], env=env, capture_output=True, text=True, timeout=60
    )


def add(env: dict[str, str], name: str, *args: str) -> str:
    done = user(env, "add", name, *args)
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip()
    assert len(token) >= 32 and "\n" not in token
    return token


async def refused(call, *parts: str) -> None:
    with pytest.raises(RequestError) as raised:
        await call
    assert raised.value.code == -32602, raised.value
    for part in parts:
        assert part in str(raised.value), raised.value


@dataclasses.dataclass
class Team:
    env: dict[str, str]
    a: str
    b: str
    tokens: dict[str, str]
    path: Any


@pytest.fixture
def team(crow_home, tmp_path):
    """alice owns a/, bob owns b/; a/out is a symlink into b/."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "out").symlink_to(b)
    env = crow_env(crow_home, NO_MODEL)
    tokens = {
        "alice": add(env, "alice", "--root", str(a)),
        "bob": add(env, "bob", "--root", str(b), "--max-mode", "plan"),
    }
    return Team(env, str(a.resolve()), str(b.resolve()), tokens, crow_home / "serve-users.toml")


def test_the_users_file_holds_hashes_only_and_is_private(team):
    env, a, tokens, path = team.env, team.a, team.tokens, team.path
    text = path.read_text()
    assert tokens["alice"] not in text and tokens["bob"] not in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    listed = user(env, "list")
    assert listed.returncode == 0 and f"alice  roots={a}" in listed.stdout and "bob  roots=" in listed.stdout
    assert "max_mode=plan" in listed.stdout and tokens["bob"] not in listed.stdout
    gone = user(env, "remove", "carol")
    assert gone.returncode == 3 and "no user named carol" in gone.stderr and "Traceback" not in gone.stderr
    bad = user(env, "add", "../x", "--root", a)
    assert bad.returncode == 3 and "user name" in bad.stderr
    path.unlink()
    (path.parent / "elsewhere.toml").write_text("")
    path.symlink_to(path.parent / "elsewhere.toml")
    followed = user(env, "list")
    assert followed.returncode == 3 and "symlink is not followed" in followed.stderr


async def test_each_user_is_confined_to_their_roots_over_http_and_websocket(team, tmp_path):
    env, a, b, tokens, path = team.env, team.a, team.b, team.tokens, team.path
    async with crow_serve(env, "--users", str(path), token=None, roots=(str(tmp_path),)) as served:
        with anyio.fail_after(120):
            async with over_http(RecordingClient(), served, tokens["alice"]) as alice:
                assert (await alice.new_session(cwd=a, mcp_servers=[])).session_id
                await refused(
                    alice.new_session(cwd=b, mcp_servers=[]), f"cwd {b} is outside the roots of user alice", a
                )
                await refused(alice.new_session(cwd=f"{a}/out", mcp_servers=[]), f"(resolved: {b})")
                await refused(alice.new_session(cwd=f"{a}/../b", mcp_servers=[]), "user alice")
                await refused(
                    alice.new_session(cwd=a, mcp_servers=[], additional_directories=[b]), "additionalDirectories"
                )
                async with over_ws(RecordingClient(), served, tokens["bob"]) as bob:
                    sid = (await bob.new_session(cwd=b, mcp_servers=[])).session_id
                    await refused(bob.new_session(cwd=a, mcp_servers=[]), "the roots of user bob", b)
                    await refused(bob.set_session_mode(session_id=sid, mode_id="auto"), "the cap of user bob, 'plan'")
                    await bob.set_session_mode(session_id=sid, mode_id="plan")
                    await refused(bob.load_session(cwd=a, session_id=sid, mcp_servers=[]), "user bob")


async def test_a_connection_answers_only_its_own_user(team, tmp_path):
    env, a, tokens, path = team.env, team.a, team.tokens, team.path
    async with crow_serve(env, "--users", str(path), token=None, roots=(str(tmp_path),)) as served:
        with anyio.fail_after(120):
            async with httpx.AsyncClient() as http:
                bobs = RawHttp(http, dataclasses.replace(served, token=tokens["bob"]))
                assert await bobs.initialize() == 200 and bobs.connection_id
                body = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": a, "mcpServers": []}}
                headers = {"Authorization": f"Bearer {tokens['alice']}", "Acp-Connection-Id": bobs.connection_id}
                stolen = await http.post(served.acp, json=body, headers=headers)
                assert stolen.status_code == 404, stolen.text  # alice's token on bob's connection: unknown


async def test_removing_a_user_ends_their_live_connections(team, tmp_path):
    env, a, tokens, path = team.env, team.a, team.tokens, team.path
    async with crow_serve(env, "--users", str(path), token=None, roots=(str(tmp_path),)) as served:
        with anyio.fail_after(120):
            headers = {"Authorization": f"Bearer {tokens['bob']}"}
            async with over_ws(RecordingClient(), served, tokens["alice"]) as alice:
                async with connect(served.ws, additional_headers=headers) as socket, httpx.AsyncClient() as http:
                    raw = RawHttp(http, dataclasses.replace(served, token=tokens["bob"]))
                    assert await raw.initialize() == 200
                    await raw.open_stream()
                    await socket.send('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}')
                    assert '"id":0' in await socket.recv()
                    assert user(env, "remove", "bob").returncode == 0
                    with pytest.raises(ConnectionClosed) as closed:
                        await socket.recv()  # the server closes it: nothing else would arrive
                    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
                    async for _ in raw._lines:  # the SSE stream ends too
                        pass
                    again = await http.post(
                        served.acp, json={"jsonrpc": "2.0", "id": 0, "method": "initialize"}, headers=headers
                    )
                    assert again.status_code == 401
                assert (await alice.new_session(cwd=a, mcp_servers=[])).session_id  # alice is untouched


async def test_sighup_rereads_the_file(team, tmp_path):
    env, tokens, path = team.env, team.tokens, team.path
    async with crow_serve(env, "--users", str(path), token=None, roots=(str(tmp_path),)) as served:
        with anyio.fail_after(120):
            async with connect(served.ws, additional_headers={"Authorization": f"Bearer {tokens['bob']}"}) as socket:
                text = path.read_text()
                stamp = path.stat()
                path.write_text(text.split("[users.bob]")[0])  # bob gone, by hand; the mtime put back
                os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
                served.proc.send_signal(1)  # SIGHUP
                with pytest.raises(ConnectionClosed) as closed:
                    await socket.recv()
                assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008


async def test_wrong_tokens_are_401_then_429_per_address(team, tmp_path):
    env, tokens, path = team.env, team.tokens, team.path
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    async with crow_serve(env, "--users", str(path), token=None, roots=(str(tmp_path),)) as served:
        with anyio.fail_after(120):
            async with httpx.AsyncClient() as http:
                statuses = []
                for guess in [
                    "x",
                    tokens["alice"][:-1],
                    "not a token",
                    tokens["alice"] + "x",
                    *("y" * n for n in range(1, 7)),
                ]:
                    response = await http.post(served.acp, json=body, headers={"Authorization": f"Bearer {guess}"})
                    statuses.append(response.status_code)
                assert statuses == [401] * 10
                late = await http.post(served.acp, json=body, headers={"Authorization": f"Bearer {tokens['alice']}"})
                assert late.status_code == 429  # the right token too, from this address, for the rest of the minute
            assert await upgrade_status(served, {"Authorization": f"Bearer {tokens['bob']}"}) == 403  # WebSocket too


def test_users_and_a_token_contradict_and_a_bad_file_is_one_line(team, tmp_path):
    env, a, path = team.env, team.a, team.path
    crow = [sys.executable, "-m", "crow", "serve", "--port", "0", "--root", str(tmp_path), "--users", str(path)]
    both = subprocess.run([*crow, "--no-token"], env=env, capture_output=True, text=True, timeout=60)
    assert both.returncode != 0 and "contradict" in both.stderr and "Traceback" not in both.stderr
    outside = subprocess.run(
        [*crow[:-4], "--root", a, "--users", str(path)], env=env, capture_output=True, text=True, timeout=60
    )
    assert outside.returncode != 0 and "outside the server's roots" in outside.stderr, outside.stderr
    path.chmod(0o666)
    loose = subprocess.run(crow, env=env, capture_output=True, text=True, timeout=60)
    assert loose.returncode != 0 and "others may write it" in loose.stderr
