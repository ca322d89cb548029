"""`crow run` tells what happened: a failing command is a failed call with its status, the closing line has
the turn's tokens and cost, diffs name files relative to the session's directory, a broken skill is one
warning, and in JSON `stop` is the last object, after an `error` too."""

from __future__ import annotations

import json
import subprocess

from support.helpers import crow_command, crow_env, write_config

from crow_acp.testing import Fault, Reply, ScriptedModel, ToolCall

PRICED = 'model = "priced"\n[models.priced]\nmodel = "priced-id"\ninput_price = 2.0\noutput_price = 8.0\n'
USAGE = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}


def crow(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(crow_command(*args), env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)


def failing_command() -> list[Reply]:
    return [
        Reply(tool_calls=[ToolCall("run_command", {"command": "echo partial; exit 3"}, id="cmd")]),
        Reply(text="ok"),
    ]


def test_a_command_that_exits_non_zero_is_a_failed_call_whose_output_the_model_reads(crow_home, tmp_path):
    with ScriptedModel(failing_command()) as model:
        done = crow(crow_env(crow_home, model.base_url), "run", "go", "--yes", "--cwd", str(tmp_path))
    err = done.stderr.decode()
    assert done.returncode == 0, err
    # crow run's commands run in the sandbox, and the line says so before the status
    assert (
        "⚙ `echo partial; exit 3` (sandboxed: the workspace writable, no network) [failed · exit 3]" in err.splitlines()
    )
    assert "completed" not in err
    result = model.requests[1]["messages"][-1]
    assert result["tool_call_id"] == "cmd" and "partial" in result["content"] and "Exit code 3." in result["content"]


def test_in_json_a_failing_command_is_failed(crow_home, tmp_path):
    with ScriptedModel(failing_command()) as model:
        done = crow(
            crow_env(crow_home, model.base_url), "run", "go", "--yes", "--format", "json", "--cwd", str(tmp_path)
        )
    events = [json.loads(line) for line in done.stdout.decode().splitlines()]
    calls = [event for event in events if event["type"] in ("tool_call", "tool_call_update")]
    statuses = [call["status"] for call in calls]
    assert statuses[0] == "pending" and statuses[-1] == "failed" and "completed" not in statuses, statuses
    assert "Exit code 3." in json.dumps(calls[-1]["content"])


def test_the_closing_line_has_the_tokens_and_the_cost_when_the_profile_has_prices(crow_home, tmp_path):
    write_config(crow_home, PRICED)
    with ScriptedModel([Reply(text="Fine.", usage=USAGE)]) as model:
        done = crow(crow_env(crow_home, model.base_url), "run", "hi", "--cwd", str(tmp_path))
    closing = done.stderr.decode().splitlines()[-1]
    assert closing.startswith("[end_turn · 1,500 tokens · 0.0060 USD · session "), closing


def test_a_diff_names_the_file_relative_to_the_sessions_directory(crow_home, tmp_path):
    (tmp_path / "sub").mkdir()
    script = [Reply(tool_calls=[ToolCall("write_file", {"path": "sub/hello.txt", "content": "hi\n"})]), Reply()]
    with ScriptedModel(script) as model:
        done = crow(crow_env(crow_home, model.base_url), "run", "go", "--yes", "--cwd", str(tmp_path))
    assert "  diff sub/hello.txt" in done.stderr.decode().splitlines()


def test_a_broken_skill_is_one_line_on_the_screen(crow_home, tmp_path):
    broken = crow_home / "skills" / "broken"
    broken.mkdir(parents=True)
    (broken / "SKILL.md").write_text("no frontmatter\n")
    with ScriptedModel([Reply(text="Fine.")]) as model:
        done = crow(crow_env(crow_home, model.base_url), "run", "hi", "--cwd", str(tmp_path))
    err = done.stderr.decode()
    assert err.count("broken/SKILL.md") == 1, err
    assert "skipping skill" in (crow_home / "logs" / "crow.log").read_text(), "the agent's log line is kept"


def test_in_json_stop_is_the_last_object_after_an_error(crow_home, tmp_path):
    with ScriptedModel([Fault(400, "no such model")]) as model:
        done = crow(crow_env(crow_home, model.base_url), "run", "hi", "--format", "json", "--cwd", str(tmp_path))
    assert done.returncode == 1
    events = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [event["type"] for event in events[-2:]] == ["error", "stop"], events
    assert events[-1]["stop_reason"] == "error" and events[-1]["session_id"] == events[-2]["session_id"]
