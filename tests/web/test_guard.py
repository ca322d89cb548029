"""`crow serve` at its edges, driven as an attacker would: a browser page (foreign Origin), DNS rebinding
(foreign Host), no token, a client naming a command, clients that vanish or send half a request, and
JSON nested 100,000 deep."""

from __future__ import annotations

import asyncio
import resource
import socket
import stat
import subprocess
import sys
import uuid
from pathlib import Path

import anyio
import httpx
import pytest
from acp import RequestError
from acp.schema import EnvVariable, McpServerStdio
from support.helpers import CORE_AGENT, RecordingClient, crow_env, echo_stdio
from support.serve_raw import RawHttp, bearer, upgrade_status
from support.serve_support import crow_serve, over_http, over_ws
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

pytestmark = pytest.mark.anyio

NO_MODEL = "http://127.0.0.1:9/v1"
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}


async def test_a_browser_page_and_a_rebinding_name_are_refused(crow_home):
    args = ("--agent", CORE_AGENT, "--allowed-host", "crow.internal", "--allowed-origin", "https://ide.example")
    async with crow_serve(crow_env(crow_home, NO_MODEL), *args) as served:
        with anyio.fail_after(60):
            assert await upgrade_status(served, bearer(served)) == 101, "an editor sends no Origin"
            assert await upgrade_status(served, {**bearer(served), "Origin": "https://evil.example"}) == 403
            assert await upgrade_status(served, {**bearer(served), "Host": "rebind.attacker.example:8765"}) == 403
            assert await upgrade_status(served, {**bearer(served), "Origin": "https://ide.example"}) == 101
            assert await upgrade_status(served, {**bearer(served), "Host": "crow.internal"}) == 101
            async with httpx.AsyncClient() as http:
                foreign = {"Host": "rebind.attacker.example"}
                for headers in (foreign, {"Origin": "https://evil.example"}, {"Origin": "null"}):
                    response = await http.post(served.acp, json=INITIALIZE, headers={**bearer(served), **headers})
                    assert response.status_code == 403, headers
                    assert (await http.get(served.url + "/health", headers=headers)).status_code == 403, headers
                assert (await http.post(served.acp, json=INITIALIZE, headers=bearer(served))).status_code == 200


async def test_without_a_token_crow_makes_one_only_its_user_can_read(crow_home):
    async with crow_serve(crow_env(crow_home, NO_MODEL), "--agent", CORE_AGENT, token=None) as served:
        port = served.url.rsplit(":", 1)[1]
        path = crow_home / f"serve-{port}.token"
        mode = path.lstat().st_mode
        assert stat.S_ISREG(mode) and stat.S_IMODE(mode) == 0o600
        token = path.read_text().strip()
        assert len(token) >= 32
        async with httpx.AsyncClient() as http:
            assert (await http.post(served.acp, json=INITIALIZE)).status_code == 401
            assert (
                await http.post(served.acp, json=INITIALIZE, headers={"Authorization": "Bearer x"})
            ).status_code == 401
            ok = await http.post(served.acp, json=INITIALIZE, headers={"Authorization": f"Bearer {token}"})
            assert ok.status_code == 200
        assert await upgrade_status(served, {}) == 403


async def test_no_token_is_loud(crow_home):
    env = crow_env(crow_home, NO_MODEL)
    async with crow_serve(env, "--agent", CORE_AGENT, "--no-token", token=None) as served:
        async with httpx.AsyncClient() as http:
            assert (await http.post(served.acp, json=INITIALIZE)).status_code == 200
    assert not list(crow_home.glob("serve-*.token"))


async def test_a_token_on_the_command_line_still_works_and_is_warned_about(crow_home):
    env = crow_env(crow_home, NO_MODEL)
    async with crow_serve(env, "--agent", CORE_AGENT, "--token", "argv-token", token=None) as served:
        async with httpx.AsyncClient() as http:
            assert (await http.post(served.acp, json=INITIALIZE)).status_code == 401
            answer = await http.post(served.acp, json=INITIALIZE, headers={"Authorization": "Bearer argv-token"})
            assert answer.status_code == 200
    assert not list(crow_home.glob("serve-*.token")), "a given token is used, not a generated one"


def test_an_empty_token_is_refused_not_taken_as_no_token(crow_home):
    empty = subprocess.run(
        [sys.executable, "-m", "crow", "serve", "--port", "9", "--token", " "],
        env=crow_env(crow_home, NO_MODEL),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert empty.returncode == 3 and "--token is empty" in empty.stderr


def test_a_port_in_use_is_one_line_and_status_3(crow_home):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "crow", "serve", "--port", str(port)],
            env=crow_env(crow_home, NO_MODEL, CROW_SERVE_TOKEN="s3cret"),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 3, done.stderr
    assert done.stderr.splitlines() == [
        f"crow: cannot listen on 127.0.0.1:{port}: the port is already in use; choose another --port"
    ]


@pytest.mark.parametrize("transport", [over_http, over_ws], ids=["http", "ws"])
async def test_a_client_cannot_make_the_server_run_a_command(crow_home, tmp_path, transport):
    mark = tmp_path / "MARK"
    shell = McpServerStdio(name="x", command="/bin/sh", args=["-c", f"touch {mark}"], env=[])
    async with crow_serve(crow_env(crow_home, NO_MODEL), "--agent", CORE_AGENT, client_commands=False) as served:
        with anyio.fail_after(60):
            async with transport(RecordingClient(), served) as conn:
                with pytest.raises(RequestError) as refused:
                    await conn.new_session(cwd=str(tmp_path), mcp_servers=[shell])
                assert refused.value.code == -32602 and "--allow-client-command" in str(refused.value)
                with pytest.raises(RequestError):  # the operator allowed none: the test's echo server is refused too
                    await conn.new_session(cwd=str(tmp_path), mcp_servers=[echo_stdio()])
                assert (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id, "the connection goes on"
    assert not mark.exists()


def _marked(mark: str) -> set[int]:
    """The live processes whose environment holds `mark` (an MCP server crow started, and its launcher)."""
    found = set()
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and mark.encode() in (proc / "environ").read_bytes():
                if (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    found.add(int(proc.name))
        except OSError:
            continue  # gone meanwhile
    return found


async def test_abandoned_connections_are_reaped_and_their_mcp_servers_stop(crow_home, tmp_path):
    args = ("--agent", CORE_AGENT, "--max-connections", "1", "--idle-timeout", "3")
    async with crow_serve(crow_env(crow_home, NO_MODEL), *args) as served:
        with anyio.fail_after(90):
            async with httpx.AsyncClient() as http:
                abandoned = RawHttp(http, served)
                assert await abandoned.initialize() == 200
                await abandoned.open_stream()
                mark = f"CROW_TEST_MARK={uuid.uuid4().hex}"
                echo = echo_stdio().model_copy(update={"env": [EnvVariable(name="CROW_TEST_MARK", value=mark[15:])]})
                answer = await abandoned.call(
                    1, "session/new", {"cwd": str(tmp_path), "mcpServers": [echo.model_dump(by_alias=True)]}
                )
                assert answer["result"]["sessionId"]
                while not _marked(mark):  # noqa: ASYNC110  (a process appearing signals nothing)
                    await anyio.sleep(0.1)
                await abandoned.stream.aclose()  # the client is gone: no DELETE, no stream, no request
            async with httpx.AsyncClient() as http:
                refused = await http.post(served.acp, json=INITIALIZE, headers=bearer(served))
                assert refused.status_code == 503, "while the abandoned one holds the only slot"
                while (await http.post(served.acp, json=INITIALIZE, headers=bearer(served))).status_code == 503:  # noqa: ASYNC110
                    await anyio.sleep(0.5)
            while _marked(mark):  # noqa: ASYNC110  (polls /proc)
                await anyio.sleep(0.1)


async def test_a_killed_clients_session_loads_on_another_server_within_the_lease_ttl(crow_home, tmp_path):
    (crow_home / "config.toml").write_text("[store]\nlease_ttl = 3\n")
    env = crow_env(crow_home, NO_MODEL)
    async with crow_serve(env, "--agent", CORE_AGENT) as first, crow_serve(env, "--agent", CORE_AGENT) as second:
        with anyio.fail_after(90):
            async with httpx.AsyncClient() as http:
                killed = RawHttp(http, first)
                assert await killed.initialize() == 200
                await killed.open_stream()
                sid = (await killed.call(1, "session/new", {"cwd": str(tmp_path), "mcpServers": []}))["result"][
                    "sessionId"
                ]
                await killed.stream.aclose()
            async with over_http(RecordingClient(), second) as conn:
                busy = 0
                while True:  # the first server's idle timeout (300 s) is far off: only the lease can run out
                    try:
                        await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                        break
                    except RequestError as exc:
                        assert exc.code == -32001, exc
                        busy += 1
                        await anyio.sleep(0.5)
    assert busy, "the first server held it until its lease ran out"


async def _half_requests(served, count: int) -> list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    host, port = served.url.removeprefix("http://").split(":")
    sockets = []
    for _ in range(count):
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(b"GET /hea")  # and never the rest
        sockets.append((reader, writer))
    return sockets


async def test_half_a_request_line_is_dropped_after_the_header_timeout(crow_home):
    async with crow_serve(crow_env(crow_home, NO_MODEL), "--agent", CORE_AGENT, "--header-timeout", "3") as served:
        with anyio.fail_after(60):
            ((reader, writer),) = await _half_requests(served, 1)
            assert await reader.read() == b"", "the server closed it"
            writer.close()


async def test_a_flood_of_half_requests_cannot_exhaust_descriptors(crow_home):
    def few_descriptors() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    async with crow_serve(crow_env(crow_home, NO_MODEL), "--agent", CORE_AGENT, preexec_fn=few_descriptors) as served:
        sockets = await _half_requests(served, 400)
        try:
            with anyio.fail_after(30):
                async with httpx.AsyncClient() as http:
                    assert (await http.get(served.url + "/health")).status_code == 200
        finally:
            for _, writer in sockets:
                writer.close()


async def test_json_nested_too_deep_gets_invalid_request_not_a_crash(crow_home):
    deep = "[" * 100_000
    async with crow_serve(crow_env(crow_home, NO_MODEL), "--agent", CORE_AGENT) as served:
        with anyio.fail_after(60):
            async with httpx.AsyncClient() as http:
                headers = {**bearer(served), "Content-Type": "application/json"}
                response = await http.post(served.acp, content=deep, headers=headers)
                assert response.status_code == 400 and response.json()["error"]["code"] == -32600
            async with connect(served.ws, additional_headers=bearer(served)) as socket:
                await socket.send(deep)
                with pytest.raises(ConnectionClosed) as closed:
                    await socket.recv()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1007
            async with over_ws(RecordingClient(), served) as conn:
                assert (await conn.new_session(cwd=str(crow_home), mcp_servers=[])).session_id, "the server serves on"
