"""`crow check` reports what works and exits 1 when something is broken; the scripted model reads a
JSON script, so crow can be tried with no model account."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.helpers import crow_command, crow_env, echo_toml, free_port

from crow_acp.testing import Fault, Reply, ScriptedModel, ScriptError, ToolCall, load_script


def crow(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        crow_command(*args), env=env, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=90
    )


def test_crow_check_reports_each_part_and_fails_on_a_broken_one(crow_home, tmp_path):
    (crow_home / "config.toml").write_text(
        echo_toml() + '[mcp_servers.gone]\ncommand = "no-such-mcp-server-here"\n'
        '[permissions.tools]\n"echo__*" = "allow"\n"shel__rm" = "deny"\n'
    )
    skill = crow_home / "skills" / "broken"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("no frontmatter here\n")
    with ScriptedModel() as model:
        base_url = model.base_url
        done = crow(crow_env(crow_home, base_url), "check", "--cwd", str(tmp_path))
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert f"endpoint   {base_url} (from OPENAI_BASE_URL)" in out
    assert "✓ the endpoint answers" in out
    assert re.search(r"✓ echo: \d+ tools \(.*echo_server.py\): .*echo__add", out)
    assert "✗ gone: command not found: no-such-mcp-server-here" in out
    assert "broken/SKILL.md" in out, "the skill's warning is listed"
    assert "⚠ shel__rm = 'deny' matches no tool" in out
    assert f"database   {crow_home / 'sessions.db'}" in out
    assert out.rstrip().endswith("1 broken")
    assert done.stderr == "", "servers' stderr and logs go to the log file"


def test_crow_check_passes_when_all_is_well_and_fails_on_a_dead_endpoint(crow_home, tmp_path):
    with ScriptedModel() as model:
        good = crow(crow_env(crow_home, model.base_url), "check", "--cwd", str(tmp_path))
    assert good.returncode == 0, good.stdout
    assert good.stdout.rstrip().endswith("nothing broken")
    dead = crow(crow_env(crow_home, f"http://127.0.0.1:{free_port()}/v1"), "check", "--cwd", str(tmp_path))
    assert dead.returncode == 1
    assert "✗ Could not reach the model endpoint" in dead.stdout


def test_crow_check_shows_a_config_error_and_fails(crow_home, tmp_path):
    (crow_home / "config.toml").write_text("[permission]\n")
    done = crow(crow_env(crow_home, "http://127.0.0.1:9/v1"), "check", "--cwd", str(tmp_path))
    assert done.returncode == 1
    assert (
        "✗ " + str(crow_home / "config.toml") + ": `[permission]`: unknown table; did you mean `[permissions]`?"
        in done.stdout
    )


def test_a_json_script_holds_replies_tool_calls_and_errors(tmp_path):
    path = tmp_path / "demo.json"
    path.write_text(
        json.dumps(
            [
                {
                    "reasoning": "A file.",
                    "text": "Writing.",
                    "tool_calls": [{"name": "write_file", "arguments": {"path": "a"}}],
                },
                {"error": {"status": 503, "message": "busy"}},
                {"text": "Done."},
            ]
        )
    )
    assert load_script(path) == [
        Reply(text="Writing.", reasoning="A file.", tool_calls=[ToolCall("write_file", {"path": "a"})]),
        Fault(status=503, message="busy"),
        Reply(text="Done."),
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('[{"txt": "hi"}]', "entry 1: unknown key 'txt'"),
        ('[{"text": "a"}, {"tool_calls": [{"nme": "x"}]}]', "entry 2, tool call 1: unknown key 'nme'"),
        ("[]", "want a non-empty JSON list of replies"),
        ("[1", "Expecting"),
    ],
)
def test_a_bad_script_names_the_entry(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ScriptError, match=message):
        load_script(path)


def test_crow_runs_on_a_scripted_model_from_a_json_file(crow_home, tmp_path):
    """The no-account demo (docs/terminal.md): the model writes a file through crow's tools, then answers."""
    script = tmp_path / "demo.json"
    script.write_text(
        json.dumps(
            [
                {
                    "text": "Writing hello.txt.",
                    "tool_calls": [{"name": "write_file", "arguments": {"path": "hello.txt", "content": "hi\n"}}],
                },
                {"text": "Done: hello.txt says hi."},
            ]
        )
    )
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "crow_acp.testing", "--port", str(port), "--script", str(script)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        base_url = server.stdout.readline().strip()
        assert base_url == f"http://127.0.0.1:{port}/v1"
        work = tmp_path / "work"
        work.mkdir()
        done = crow(crow_env(crow_home, base_url), "run", "say hi in a file", "--yes", "--cwd", str(work))
    finally:
        server.terminate()
        server.wait(10)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Writing hello.txt.\nDone: hello.txt says hi.\n"
    assert (work / "hello.txt").read_text() == "hi\n"


def test_crow_check_warns_when_the_model_id_is_not_in_the_endpoints_list(crow_home, tmp_path):
    (crow_home / "config.toml").write_text('model = "p"\n[models.p]\nmodel = "scripted-modle"\n')
    with ScriptedModel() as model:
        env = crow_env(crow_home, model.base_url)
        typo = crow(env, "check", "--cwd", str(tmp_path))
        (crow_home / "config.toml").write_text('model = "p"\n[models.p]\nmodel = "scripted-model"\n')
        right = crow(env, "check", "--cwd", str(tmp_path))
    warning = "⚠ model id 'scripted-modle' is not in the endpoint's /models list; closest: 'scripted-model'"
    assert warning in typo.stdout
    assert typo.returncode == 0, "a warning, not a failure: some endpoints list only part of what they serve"
    assert "/models list" not in right.stdout and right.returncode == 0
