"""Secrets stay put: commands and stdio MCP servers never inherit crow's model keys, and no key
reaches the model's requests, the database or the logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp.schema import McpServerStdio, ResourceContentBlock
from support import spawn
from support.editor_support import EDITOR_CAPS, EditorClient, results
from support.helpers import TESTS, crow_env, run_crow, text, write_config

from crow_acp.testing import Reply, ScriptedModel, ToolCall

KEY = "sk-crow-test-" + "9" * 24
OTHER = "other-model-key-" + "7" * 20
EXPLICIT = "passed-explicitly-1234"
ENV_SERVER = TESTS / "mcp_servers" / "env_server.py"


def setup_home(home: Path) -> None:
    home.mkdir()
    write_config(
        home,
        f"""
model = "main"

[models.main]
model = "scripted"

[models.other]
model = "scripted-too"
api_key_env = "CROW_TEST_OTHER_KEY"

[mcp_servers.configured]
command = {json.dumps(spawn.python())}
args = [{json.dumps(str(ENV_SERVER))}]
env = {{ CROW_TEST_OTHER_KEY = "{EXPLICIT}" }}
""",
    )


def everything_written(home: Path) -> bytes:
    """The database (with its WAL) and the logs, as bytes."""
    return b"".join(
        path.read_bytes() for path in sorted(home.rglob("*")) if path.is_file() and path.name != "config.toml"
    )


@pytest.mark.anyio
@pytest.mark.parametrize("capabilities", [None, EDITOR_CAPS], ids=["local", "client"])
async def test_keys_reach_no_command_server_request_store_or_log(tmp_path, monkeypatch, capabilities):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # the "editor" runs its terminals with the agent's env too
    monkeypatch.setenv("CROW_TEST_OTHER_KEY", OTHER)
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    setup_home(home)
    (work / ".env").write_text(f"OPENAI_API_KEY={KEY}\nOTHER={OTHER}\n")
    calls = [
        ToolCall("run_command", {"command": "env; echo END"}, id="env"),
        ToolCall("configured__getenv", {"name": "OPENAI_API_KEY"}, id="cfg_key"),
        ToolCall("configured__getenv", {"name": "CROW_TEST_OTHER_KEY"}, id="cfg_explicit"),
        ToolCall("editor__getenv", {"name": "OPENAI_API_KEY"}, id="ed_key"),
        ToolCall("editor__getenv", {"name": "CROW_TEST_OTHER_KEY"}, id="ed_other"),
        ToolCall("read_file", {"path": ".env"}, id="dotenv"),
    ]
    client = EditorClient({str(work / ".env"): (work / ".env").read_text()})
    script = [Reply(tool_calls=[call]) for call in calls]
    editor_server = McpServerStdio(name="editor", command=spawn.python(), args=[str(ENV_SERVER)], env=[])
    link = ResourceContentBlock(type="resource_link", name=".env", uri=(work / ".env").as_uri())
    with ScriptedModel(script, default=Reply(text="done")) as model:
        env = crow_env(home, model.base_url, OPENAI_API_KEY=KEY, CROW_TEST_OTHER_KEY=OTHER, CROW_LOG_LEVEL="DEBUG")
        async with run_crow(client, env, cwd=str(work), capabilities=capabilities) as (conn, _):
            session = await conn.new_session(cwd=str(work), mcp_servers=[editor_server])
            response = await conn.prompt(session_id=session.session_id, prompt=[text("go"), link])
            assert response.stop_reason == "end_turn"
    got = results(model)
    assert "END" in got["env"]
    assert "OPENAI_API_KEY" not in got["env"] and "CROW_TEST_OTHER_KEY" not in got["env"]
    assert got["cfg_key"] == "(unset)" and got["cfg_explicit"] == EXPLICIT  # passed on only when the config says so
    assert got["ed_key"] == "(unset)" and got["ed_other"] == "(unset)"
    assert got["dotenv"] == "OPENAI_API_KEY=[redacted key]\nOTHER=[redacted key]\n"
    assert "OPENAI_API_KEY=[redacted key]" in model.requests[0]["messages"][-1]["content"]  # the prompt link
    if capabilities is not None:
        assert client.called("create_terminal")  # the command really ran in the editor's terminal
    sent = json.dumps(model.requests)
    written = everything_written(home)
    assert b"crow.log" in b"".join(p.name.encode() for p in home.rglob("*"))  # there is a log to check
    for key in (KEY, OTHER):
        assert key not in sent
        assert key.encode() not in written
        assert all(key not in str(update) for update in client.updates)


def test_a_secret_set_after_a_line_was_sent_is_redacted_from_the_next(monkeypatch):
    """key_values() keeps its last answer while the environment is unchanged (it runs for every line
    crow sends); a variable set, changed or removed since is seen at once."""
    from crow_acp.util.secrets import MARK, dumps

    token = "ghp_" + "5" * 30
    assert token in dumps({"text": token})
    monkeypatch.setenv("CROW_TEST_LATE_TOKEN", token)
    assert dumps({"text": token}) == json.dumps({"text": MARK})
    monkeypatch.setenv("CROW_TEST_LATE_TOKEN", "x" + token)
    assert token in dumps({"text": token}) and MARK in dumps({"text": "x" + token})
    monkeypatch.delenv("CROW_TEST_LATE_TOKEN")
    assert dumps({"text": "x" + token}) == json.dumps({"text": "x" + token})
