"""Starting `crow serve` as an operator does: the token it accepts, the URLs it prints, the token file it
writes (only once the port is its own, gone at exit), and the modes of what it leaves in $CROW_HOME."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from support.helpers import RecordingClient, crow_env, free_port, text
from support.serve_support import Served, crow_serve, over_ws

from crow_acp.testing import Reply, ScriptedModel

pytestmark = pytest.mark.anyio
NO_MODEL = "http://127.0.0.1:9"
GC_AGENT = f"{Path(__file__).resolve().parents[1] / 'agents' / 'gc_agent.py'}:build"


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("token", ["x", "…", "a" * 31])
def test_a_short_token_is_refused_beyond_loopback(crow_home, token):
    done = subprocess.run(
        [sys.executable, "-m", "crow", "serve", "--host", "0.0.0.0", "--port", str(free_port())],
        env=crow_env(crow_home, NO_MODEL, CROW_SERVE_TOKEN=token),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3, done.stderr
    [line] = done.stderr.splitlines()
    assert "needs at least 32" in line and token not in line


async def started(env: dict[str, str], port: int, *args: str) -> tuple[asyncio.subprocess.Process, list[str]]:
    """`crow serve` under umask 022, with what it said on stderr until it printed its URLs."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "crow", "serve", "--port", str(port), *args,
        env=env, stderr=asyncio.subprocess.PIPE, preexec_fn=lambda: os.umask(0o022),
    )  # fmt: skip
    lines: list[str] = []
    assert proc.stderr is not None
    with anyio.fail_after(60):
        while not lines or "clients connect to" not in lines[-1]:
            line = (await proc.stderr.readline()).decode()
            assert line, f"crow serve exited: {lines}"
            lines.append(line.rstrip("\n"))
    return proc, [line for line in lines if line.startswith("crow")]


async def test_urls_token_file_and_private_files_under_umask_022(crow_home, tmp_path):
    os.chmod(crow_home, 0o755)  # as an older crow (or mkdir under umask 022) left it
    port = free_port()
    token_file = crow_home / f"serve-{port}.token"
    async with ScriptedModel([Reply(text="hello")]) as model:
        env = crow_env(crow_home, model.base_url)
        proc, said = await started(env, port, f"--root={tmp_path}")
        try:
            assert said[0] == f"crow: warning: directory {crow_home} was open to other users (mode 0755); made it 0700"
            assert f"the token is in {token_file}" in said[-2]
            assert said[-1] == (
                f"crow serve: clients connect to http://127.0.0.1:{port}/acp (Streamable HTTP) "
                f"and ws://127.0.0.1:{port}/acp (WebSocket)"
            )
            token = token_file.read_text().strip()
            clash = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "crow", "serve", "--port", str(port), env=env, stderr=asyncio.subprocess.PIPE
            )
            _, clash_said = await clash.communicate()
            assert clash.returncode == 3 and b"already in use" in clash_said
            assert token_file.read_text().strip() == token, "the clash left the running server's token alone"
            served = Served(proc, f"http://127.0.0.1:{port}", token)  # type: ignore[arg-type]
            with anyio.fail_after(60):
                async with over_ws(RecordingClient(), served) as conn:
                    sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                    await conn.prompt(session_id=sid, prompt=[text("hi")])
                    db = crow_home / "sessions.db"
                    files = [db, db.with_name("sessions.db-wal"), db.with_name("sessions.db-shm")]
                    files += [crow_home / "logs" / "crow.log", token_file]
                    assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}
                    assert (mode(crow_home), mode(crow_home / "logs")) == (0o700, 0o700)
        finally:
            proc.terminate()
            assert await proc.wait() == 0
    assert not token_file.exists(), "no stale token file outlives its server"


def test_the_scripted_model_does_not_take_crow_serves_port():
    with socket.socket() as probe:  # the scripted model's default port must be free for this test
        try:
            probe.bind(("127.0.0.1", 8766))
        except OSError:
            pytest.fail("port 8766 is taken on this machine")
    proc = subprocess.Popen(
        [sys.executable, "-m", "crow_acp.testing"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert "127.0.0.1:8766" in first and "8765" not in first
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def the_client_snippet() -> str:
    page = (Path(__file__).resolve().parents[2] / "docs" / "serve.md").read_text()
    return page.split("## Connecting", 1)[1].split("```python\n", 1)[1].split("\n```\n", 1)[0]


async def test_the_client_in_docs_serve_md_runs_as_written(crow_home, tmp_path):
    (tmp_path / "client.py").write_text(the_client_snippet())
    async with ScriptedModel([Reply(text="Hello from the team server.")]) as model:
        async with crow_serve(crow_env(crow_home, model.base_url), roots=(str(tmp_path),)) as served:
            env = {**os.environ, "CROW_URL": served.acp, "CROW_SERVE_TOKEN": served.token or ""}
            client = await asyncio.create_subprocess_exec(
                sys.executable, "client.py", cwd=tmp_path, env=env, stdout=asyncio.subprocess.PIPE
            )
            with anyio.fail_after(60):
                out, _ = await client.communicate()
    assert client.returncode == 0 and out.decode() == "Hello from the team server.\n"


async def test_a_served_agent_runs_with_start_up_frozen_and_collection_on(crow_home, tmp_path):
    """crow serve starts without the cyclic collector, as crow acp does, and turns it back on once the store,
    the tracer and one agent are built, having frozen that heap (crow_acp/server/startup_gc.py)."""
    record = tmp_path / "gc.json"
    env = crow_env(crow_home, NO_MODEL, GC_FILE=str(record))
    async with crow_serve(env, "--agent", GC_AGENT, python_args=("-X", "faulthandler")) as served:
        async with over_ws(RecordingClient(), served) as conn:
            await conn.initialize(protocol_version=1)
    seen = json.loads(record.read_text())
    assert seen["enabled"], "collection must be back on once the server is up"
    assert seen["frozen"] > 10_000, "the start-up heap (acp, pydantic models, the store, crow) is frozen"
