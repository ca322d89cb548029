"""What a new user hit on a fresh clone (issue 28): a bad flag said as such before a missing key, the /mode
hint naming every mode, `crow check` looking at [agents.*] and naming the key's source, `crow sessions`
marking delegate helpers with --json and -q, and no database password in any message."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from support.helpers import RecordingClient, crow_command, crow_env, write_config
from support.hosted import hosted_crow

from crow_acp.config import load_config
from crow_acp.history import StoredMessage
from crow_acp.store import SessionRecord, open_store

PASSWORD = "hunter2-not-shown"


def crow(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        crow_command(*args), env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=90
    )


def keyless(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "CROW_"))}
    return {**env, "CROW_HOME": str(home), **extra}


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--mode", "yolo"], "crow: --mode 'yolo' is not a mode"),
        (["--allow", "rm -rf"], "crow: --allow 'rm -rf': a pattern is a tool name"),
    ],
)
def test_a_bad_flag_with_no_key_is_the_flags_error(crow_home, tmp_path, flags, said):
    done = crow(keyless(crow_home), "run", "hi", "--cwd", str(tmp_path), *flags)
    assert done.returncode == 2 and done.stderr.startswith(said), done.stderr


@pytest.mark.anyio
async def test_the_mode_hint_names_every_mode(crow_home, tmp_path):
    from crow_acp.policy.modes import MODE_IDS

    client = RecordingClient()
    async with hosted_crow(client, crow_env(crow_home, "http://127.0.0.1:9/v1")) as (conn, _):
        await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await client.wait_for(lambda c: c.of("available_commands_update"))
    (update, *_) = client.of("available_commands_update")
    (mode,) = [command for command in update.available_commands if command.name == "mode"]
    assert "auto" in MODE_IDS and mode.input.root.hint == " | ".join(MODE_IDS)


def test_check_reports_a_member_whose_program_is_missing_and_the_key_source(crow_home, tmp_path):
    write_config(
        crow_home,
        '[agents.ghost]\ncommand = ["no-such-acp-agent-here"]\n[agents.here]\ncommand = ["sh", "-c", "true"]\n',
    )
    done = crow(crow_env(crow_home, "http://127.0.0.1:9/v1"), "check", "--cwd", str(tmp_path))
    assert done.returncode == 1
    assert "  ✗ ghost: 'no-such-acp-agent-here' is not installed" in done.stdout
    assert "  ✓ here: " in done.stdout
    assert "  key        environment (OPENAI_API_KEY)" in done.stdout
    assert "test-key" not in done.stdout


def make_sessions(home: Path) -> tuple[str, str, str]:
    store = open_store(load_config(home))
    now = time.time()
    parent, helper, alone = "a" * 32, "b" * 32, "c" * 32
    links = {"context": {"delegations": [{"session": helper, "agent": "crow-helper", "call": "call_1"}]}}
    said = [StoredMessage({"role": "user", "content": "hi"}, row_id=1)]
    store.create(SessionRecord(parent, "/w", "the parent", now, now + 2, {"agent": "crow", **links}), said)
    store.create(SessionRecord(helper, "/w", "the task", now, now + 1, {"agent": "crow-helper"}), said)
    store.create(SessionRecord(alone, "/x", "alone", now, now, {"agent": "crow"}), said)
    asyncio.run(store.close())
    return parent, helper, alone


def test_sessions_marks_helpers_and_lists_as_json_or_ids(crow_home):
    parent, helper, alone = make_sessions(crow_home)
    env = keyless(crow_home)
    table = crow(env, "sessions").stdout.splitlines()
    (row,) = [line for line in table if line.startswith(helper)]
    assert row.endswith(f"/w  (helper of {parent})")
    assert not any(line.endswith(")") for line in table if not line.startswith(helper))
    listed = json.loads(crow(env, "sessions", "--json").stdout)
    assert {s["id"]: s["helper_of"] for s in listed} == {parent: None, helper: parent, alone: None}
    assert {s["id"]: s["agent"] for s in listed}[helper] == "crow-helper"
    assert crow(env, "sessions", "-q").stdout.split() == [s["id"] for s in listed]
    misused = crow(env, "sessions", "show", parent, "--json")
    assert (misused.returncode, misused.stderr) == (2, "crow: --json and -q are for `crow sessions list`, not show\n")


@pytest.mark.parametrize("args", [["sessions"], ["sessions", "show", "abcdef12"], ["sessions", "delete", "abcdef12"]])
def test_a_broken_database_url_never_prints_its_password(crow_home, args):
    url = f"postgresql://crow:{PASSWORD}@127.0.0.1:9/crow"
    done = crow(keyless(crow_home, CROW_DATABASE_URL=url), *args)
    assert done.returncode == 1, done.stderr
    assert PASSWORD not in done.stdout + done.stderr
    assert "postgresql://crow:***@127.0.0.1:9/crow" in done.stderr


def test_with_2_to_1_the_tool_status_starts_its_own_line(crow_home, tmp_path):
    from crow_acp.testing import Reply, ScriptedModel, ToolCall

    script = [Reply(text="Looking", tool_calls=[ToolCall("list_files", {"path": "."})]), Reply(text="Done.")]
    with ScriptedModel(script) as model:
        done = subprocess.run(
            crow_command("run", "look", "--yes", "--cwd", str(tmp_path)),
            env=crow_env(crow_home, model.base_url),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=90,
        )
    assert done.returncode == 0, done.stdout
    lines = done.stdout.splitlines()
    assert "Looking" in lines, lines
    assert lines[lines.index("Looking") + 1].startswith("⚙ "), lines


def test_ci_runs_the_readmes_test_command_after_only_system_packages():
    root = Path(__file__).parents[2]
    readme = (root / "README.md").read_text()
    command = next(line for line in readme.splitlines() if line.endswith("-m pytest -q") and "pip install" in line)
    script = [line for line in (root / ".ci" / "run").read_text().splitlines() if not line.startswith("#")]
    before = script[: script.index(command)]
    assert not [line for line in before if "npm ci" in line or "fast_agent" in line or ".venv/" in line]
