"""Signing in as ACP defines it: with no key, session/new answers auth_required (-32000); `crow setup` stores
the credentials (0600); authenticate answers; sessions work with the stored key; logout removes it."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from acp import RequestError
from acp.schema import AuthCapabilities, ClientCapabilities
from support.helpers import RecordingClient, crow_command, run_crow, text

from crow_acp.testing import Reply, ScriptedModel

pytestmark = pytest.mark.anyio
KEY = "sk-right-key-0123456789"


def keyless_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a new user: no model key and no base URL anywhere."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "CROW_"))}
    return {**env, "CROW_HOME": str(home), **extra}


def setup(env: dict[str, str], model: ScriptedModel, key: str, *more: str) -> subprocess.CompletedProcess[str]:
    """`crow setup` by flags, the key on stdin (the scripted model runs in its own thread: blocking is fine)."""
    args = ["setup", "--provider", "custom", "--base-url", model.base_url, *more]
    return subprocess.run(crow_command(*args), env=env, input=key + "\n", capture_output=True, text=True, timeout=60)


async def logout(conn) -> None:
    """`logout` (stable ACP; the Python SDK's client has no method for it)."""
    assert await conn._conn.send_request("logout", {}) == {}


async def new_session_error(conn, cwd: Path) -> RequestError:
    with pytest.raises(RequestError) as refused:
        await conn.new_session(cwd=str(cwd), mcp_servers=[])
    return refused.value


async def test_no_key_setup_authenticate_prompt_logout_and_asked_again(crow_home, tmp_path):
    env = keyless_env(crow_home)
    # The first reply answers setup's check request, the second the prompt.
    async with ScriptedModel([Reply(text="."), Reply(text="signed in")]) as model:
        model.api_key = KEY
        caps = ClientCapabilities(auth=AuthCapabilities(terminal=True))
        async with run_crow(RecordingClient(), env, capabilities=caps) as (conn, _):
            refused = await new_session_error(conn, tmp_path)
            assert refused.code == -32000
            assert "crow setup" in str(refused) and "OPENAI_API_KEY" in str(refused)
            with pytest.raises(RequestError) as early:
                await conn.authenticate(method_id="crow-setup")
            assert early.value.code == -32000

            wrong = setup(env, model, "sk-wrong-key-0123456789")
            assert wrong.returncode == 1
            refusal = "the provider refused the model list request: HTTP 401: Incorrect API key provided."
            assert wrong.stderr == f"crow: {refusal}\n"
            assert not (crow_home / "credentials.toml").exists()
            stored = setup(env, model, KEY)
            assert stored.returncode == 0, stored.stderr
            assert KEY not in stored.stdout + stored.stderr
            path = crow_home / "credentials.toml"
            assert stat.S_IMODE(path.stat().st_mode) == 0o600

            await conn.authenticate(method_id="crow-setup")
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            done = await conn.prompt(session_id=sid, prompt=[text("hello")])
            assert done.stop_reason == "end_turn"
            assert model.headers[-1]["authorization"] == f"Bearer {KEY}"
            assert model.requests[-1]["model"] == "scripted-model"  # the model setup picked from the list

            await logout(conn)
            assert not path.exists()
            assert (await new_session_error(conn, tmp_path)).code == -32000
    for stored_file in crow_home.rglob("*"):
        if stored_file.is_file():
            assert KEY.encode() not in stored_file.read_bytes(), f"the key is in {stored_file}"


async def test_a_key_in_the_environment_never_gets_auth_required(crow_home, tmp_path):
    env = keyless_env(crow_home, ANTHROPIC_API_KEY="sk-ant-0123456789")
    async with run_crow(RecordingClient(), env) as (conn, _):
        assert (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id


async def test_a_local_base_url_needs_no_key(crow_home, tmp_path):
    env = keyless_env(crow_home, OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    async with run_crow(RecordingClient(), env) as (conn, _):
        assert (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id


async def test_a_key_in_the_environment_wins_over_the_stored_one(crow_home, tmp_path):
    async with ScriptedModel([Reply(text="."), Reply(text="env key")]) as model:
        assert setup(keyless_env(crow_home), model, "sk-stored-0123456789").returncode == 0
        env = keyless_env(crow_home, OPENAI_API_KEY="sk-environment-0123456789")
        async with run_crow(RecordingClient(), env) as (conn, _):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[text("hello")])
            await logout(conn)  # removes the stored credentials, never the environment's key
            assert (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        assert model.headers[-1]["authorization"] == "Bearer sk-environment-0123456789"
    assert not (crow_home / "credentials.toml").exists()


def test_setup_in_a_script_without_a_key_is_a_usage_error(crow_home):
    env = keyless_env(crow_home)
    done = subprocess.run(
        crow_command("setup", "--provider", "openai"), env=env, input="", capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stderr) == (
        2,
        "crow: OpenAI needs a key: pipe it on stdin, or name its variable with --key-env\n",
    )
    assert not (crow_home / "credentials.toml").exists()


def test_the_legacy_terminal_auth_command_runs_setup(crow_home):
    """The `_meta["terminal-auth"]` command is sys.executable -m crow setup: it must be that program."""
    done = subprocess.run([sys.executable, "-m", "crow", "setup", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "--provider" in done.stdout


async def test_setup_for_anthropic_stores_its_wire_and_sessions_speak_messages(crow_home, tmp_path):
    """crow setup --provider anthropic: the check request and the prompts after it go to /v1/messages."""
    async with ScriptedModel([Reply(text="."), Reply(text="Hello from Claude")]) as model:
        env = keyless_env(crow_home)
        stored = setup(env, model, KEY, "--provider", "anthropic", "--model", "claude-test")  # the last one wins
        assert stored.returncode == 0, stored.stderr
        assert 'api = "anthropic"' in (crow_home / "credentials.toml").read_text()
        client = RecordingClient()
        async with run_crow(client, env) as (conn, _):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[text("hello")])
        assert "Hello from Claude" in client.text()
        sent = [h.get("x-api-key") or h.get("authorization", "").removeprefix("Bearer ") for h in model.headers]
        assert sent == [KEY, KEY]  # the check (x-api-key), then the prompt (the SDK's own header)
        assert model.requests[-1]["model"] == "claude-test" and "max_tokens" in model.requests[-1]
