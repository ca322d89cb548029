"""No model key reaches the store, crow.log (at DEBUG), the model's requests or the editor (issue 13
item 4), whoever brings it into crow: an MCP server handed the key leaks it in tool text, structured
content, an error message, a resource and astride the cut of a long result; the model writes it in
a plan step, a reply and a session title; the provider's error message quotes it."""

from __future__ import annotations

import json
import secrets
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import RequestError
from acp.schema import ResourceContentBlock
from support import spawn
from support.helpers import TESTS, RecordingClient, crow_command, crow_env, free_port, run_crow, text, write_config

from crow_acp.testing import Fault, Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio
KEY = "sk-leak-" + secrets.token_hex(16)
HALF = KEY[: len(KEY) // 2]
"""What a cut in the middle of the key would leave: no part of a key may get out either."""
MARK = "[redacted key]"
LEAKY = TESTS / "mcp_servers" / "leaky_server.py"


def setup_home(home: Path) -> None:
    home.mkdir()
    write_config(
        home,
        f"""
model = "main"

[models.main]
model = "scripted"
api_key_env = "CROW_TEST_MAIN_KEY"

[mcp_servers.leaky]
command = {json.dumps(spawn.python())}
args = [{json.dumps(str(LEAKY))}]
env = {{ LEAKED = "{KEY}" }}

[mcp_servers.remote]
url = "http://127.0.0.1:{free_port()}/mcp?key={KEY}"
""",
    )


def written(home: Path) -> str:
    """The database (with its WAL) and the logs."""
    files = [path for path in sorted(home.rglob("*")) if path.is_file() and path.name != "config.toml"]
    assert any(path.name == "crow.log" for path in files) and any(path.name.startswith("sessions.db") for path in files)
    return b"".join(path.read_bytes() for path in files).decode("utf-8", "replace")


def assert_clean(where: str, blob: str) -> None:
    assert KEY not in blob, where
    assert HALF not in blob, where


def script() -> list[Reply | Fault]:
    leaks = [ToolCall(f"leaky__{name}", {}, id=name) for name in ("leak", "long_leak", "fail_leak")]
    plan = {"entries": [{"content": f"rotate {KEY} today", "status": "pending"}]}
    return [
        Reply(tool_calls=leaks),
        Reply(tool_calls=[ToolCall("write_plan", plan, id="plan")]),
        Reply(text=f"Done: it was {KEY}.", chunks=1),
        Fault(400, f"Incorrect API key provided: {KEY}"),
    ]


def titled(client: RecordingClient) -> list[Any]:
    return [u.title for u in client.of("session_info_update") if u.title and u.title.startswith("Leaked")]


async def test_no_key_reaches_the_store_the_log_the_model_or_the_editor(tmp_path):
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    setup_home(home)
    client = RecordingClient()
    with ScriptedModel(script(), default=Reply(text="done")) as model:
        model.titles = Reply(text=f"Leaked {KEY} key")
        env = crow_env(home, model.base_url, CROW_TEST_MAIN_KEY=KEY, CROW_LOG_LEVEL="DEBUG")
        async with run_crow(client, env, cwd=str(work)) as (conn, _):
            session_id = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            link = ResourceContentBlock(type="resource_link", name="secret", uri="leak://secret")
            response = await conn.prompt(session_id=session_id, prompt=[text("go"), link])
            assert response.stop_reason == "end_turn"
            await client.wait_for(titled, timeout=30)
            with pytest.raises(RequestError) as failed:
                await conn.prompt(session_id=session_id, prompt=[text("again")])
    tool_results = {m["tool_call_id"]: m["content"] for m in model.requests[2]["messages"] if m["role"] == "tool"}
    assert tool_results["leak"].startswith("{") and MARK in tool_results["leak"]  # structured content only
    assert tool_results["long_leak"].endswith("characters]") and MARK in tool_results["long_leak"]
    assert tool_results["fail_leak"].startswith("Tool error") and MARK in tool_results["fail_leak"]
    assert f"the key is {MARK}" in json.dumps(model.requests[0]["messages"][-1])  # the MCP resource link, read
    assert titled(client) == [f"Leaked {MARK} key"]
    assert [entry.content for update in client.of("plan") for entry in update.entries] == [f"rotate {MARK} today"]
    assert MARK in client.text() and MARK in str(failed.value)
    assert_clean("model requests", json.dumps([*model.requests, *model.title_requests]))
    assert_clean("editor updates", repr(client.updates))
    assert_clean("the error answer", f"{failed.value} {failed.value.data}")
    assert_clean("database and log", written(home))


async def test_a_traceback_that_quotes_the_key_is_logged_without_it(tmp_path):
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    setup_home(home)
    agent = str(TESTS / "agents" / "leaky_agent.py") + ":build"
    with ScriptedModel(default=Reply(text="done")) as model:
        env = crow_env(home, model.base_url, CROW_TEST_MAIN_KEY=KEY, CROW_LOG_LEVEL="DEBUG")
        async with run_crow(RecordingClient(), env, "--agent", agent, cwd=str(work)) as (conn, _):
            session_id = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            response = await conn.prompt(session_id=session_id, prompt=[text("go")])
            assert response.stop_reason == "end_turn"
    log = written(home)
    assert (
        "Traceback (most recent call last)" in log
        and f"RuntimeError: the proxy refused https://api.example/v1?key={MARK}" in log
    )
    assert_clean("database and log", log)


async def test_crow_run_shows_and_logs_no_key(tmp_path):
    """`crow run` copies the MCP server's stderr (here the leaky server's, which prints the key) to crow.log
    and, with -v, to the screen."""
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    setup_home(home)
    script = [Reply(tool_calls=[ToolCall("leaky__leak", {}, id="leak")]), Reply(text="done", chunks=1)]
    with ScriptedModel(script) as model:
        env = crow_env(home, model.base_url, CROW_TEST_MAIN_KEY=KEY)
        command = crow_command("run", "go", "--yes", "-v", "--format", "json", "--cwd", str(work))
        with anyio.fail_after(90):
            done = await anyio.run_process(command, env=env, check=False, stdin=subprocess.DEVNULL)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    assert MARK in out and f"leaky server starting with key {MARK}" in err  # the leaks were there, and shown redacted
    assert_clean("crow run's output", out + err)
    assert_clean("database and log", written(home))


async def test_crow_check_reports_an_endpoint_url_without_its_key(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    write_config(home, 'model = "main"\n\n[models.main]\nmodel = "scripted"\napi_key_env = "CROW_TEST_MAIN_KEY"\n')
    env = crow_env(home, f"http://127.0.0.1:{free_port()}/v1?key={KEY}", CROW_TEST_MAIN_KEY=KEY)
    command = crow_command("check", "--cwd", str(tmp_path))
    with anyio.fail_after(90):
        done = await anyio.run_process(command, env=env, check=False, stdin=subprocess.DEVNULL)
    out = done.stdout.decode() + done.stderr.decode()
    assert done.returncode == 1 and f"/v1?key={MARK}" in out  # the dead endpoint is reported, its key redacted
    assert_clean("crow check's report", out)
    assert_clean("the log", written_log(home))


def written_log(home: Path) -> str:
    return b"".join(path.read_bytes() for path in home.rglob("*.log")).decode("utf-8", "replace")
