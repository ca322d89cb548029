"""`crow run` in a pipe: stdout carries only the answer, or one JSON object per event with --format json."""

from __future__ import annotations

import json
import subprocess

import anyio
import pytest
from support.helpers import crow_command, crow_env, echo_toml, write_config

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio


async def crow(env: dict[str, str], *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    with anyio.fail_after(60):
        return await anyio.run_process(
            crow_command(*args), env=env, check=False, stdin=subprocess.DEVNULL if stdin is None else None, input=stdin
        )


async def test_in_a_pipe_stdout_carries_only_the_answer(crow_home, tmp_path):
    write_config(crow_home, echo_toml())
    script = [
        Reply(
            text="Adding them up.",
            reasoning="Use the tool.",
            tool_calls=[ToolCall("echo__add", {"a": 40, "b": 2}, id="sum")],
        ),
        Reply(text="The sum is 42.", chunks=4),
    ]
    async with ScriptedModel(script) as model:
        done = await crow(
            crow_env(crow_home, model.base_url), "run", "what is 40 + 2?", "--yes", "--cwd", str(tmp_path)
        )
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    assert out == "Adding them up.\nThe sum is 42.\n"
    lines = err.splitlines()
    start = lines.index("⚙ add (echo) [pending]")
    assert "Use the tool." in lines[:start], "reasoning goes to stderr, before the call"
    assert lines[start : start + 3] == ["⚙ add (echo) [pending]", "⚙ add (echo) [completed]", "  42"]
    assert lines[-1].startswith("[end_turn · ") and " · session " in lines[-1]
    assert model.requests[-1]["messages"][-1] == {"role": "tool", "tool_call_id": "sum", "content": "42"}


async def test_format_json_prints_one_object_per_event(crow_home, tmp_path):
    write_config(crow_home, echo_toml())
    script = [
        Reply(
            text="Adding.", reasoning="Hmm.", tool_calls=[ToolCall("echo__add", {"a": 1, "b": 2}, id="c1")], chunks=1
        ),
        Reply(text="3.", chunks=1),
    ]
    async with ScriptedModel(script) as model:
        done = await crow(
            crow_env(crow_home, model.base_url), "run", "1+2", "--yes", "--format", "json", "--cwd", str(tmp_path)
        )
    assert done.returncode == 0, done.stderr.decode()
    events = [json.loads(line) for line in done.stdout.decode().splitlines()]
    kinds = [event["type"] for event in events]
    assert kinds.index("thought") < kinds.index("text") and kinds[-1] == "stop" and "usage" in kinds
    assert [e["text"] for e in events if e["type"] == "text"] == ["Adding.", "3."]
    calls = [e for e in events if e["type"] in ("tool_call", "tool_call_update") and e["id"] == "c1"]
    assert calls[0]["type"] == "tool_call" and calls[0]["status"] == "pending" and calls[0]["title"] == "add (echo)"
    assert [c["status"] for c in calls[1:]] == ["in_progress", "completed"]
    assert calls[-1]["content"] == [{"type": "content", "content": {"type": "text", "text": "3"}}]
    assert events[-1]["stop_reason"] == "end_turn" and events[-1]["session_id"]


async def test_a_permission_nobody_can_answer_is_refused(crow_home, tmp_path):
    script = [Reply(tool_calls=[ToolCall("write_file", {"path": "x\x1b[2K.txt", "content": "hi"})]), Reply(text="ok")]
    async with ScriptedModel(script) as model:
        done = await crow(crow_env(crow_home, model.base_url), "run", "write", "--cwd", str(tmp_path))
    assert done.returncode == 0, done.stderr.decode()
    assert "⚙ Write x\\x1b[2K.txt: permission needed; refused" in done.stderr.decode(), "escapes are shown, not obeyed"
    assert [path.name for path in tmp_path.iterdir()] == ["crow-home"], "nothing written"
    assert "rejected" in model.requests[-1]["messages"][-1]["content"]


async def test_crow_run_continues_a_session_without_reprinting_it(crow_home, tmp_path):
    async with ScriptedModel([Reply(text="First answer."), Reply(text="Second answer.")]) as model:
        env = crow_env(crow_home, model.base_url)
        first = await crow(env, "run", "--cwd", str(tmp_path), "one")
        sid = first.stderr.decode().split("session ")[-1].split("]")[0]
        second = await crow(env, "run", "--cwd", str(tmp_path), "--session", sid, "two")
    assert first.stdout.decode() == "First answer.\n"
    assert second.returncode == 0, second.stderr.decode()
    assert second.stdout.decode() == "Second answer.\n", "the replayed history is not printed again"
    assert [m["content"] for m in model.requests[-1]["messages"] if m["role"] != "system"] == [
        "one",
        "First answer.",
        "two",
    ]


async def test_the_prompt_can_come_from_stdin(crow_home, tmp_path):
    async with ScriptedModel([Reply(text="Read it.")]) as model:
        done = await crow(
            crow_env(crow_home, model.base_url), "run", "-", "--cwd", str(tmp_path), stdin=b"from stdin\n"
        )
    assert done.stdout.decode() == "Read it.\n"
    assert model.requests[0]["messages"][-1]["content"] == "from stdin\n"


async def test_crow_run_without_a_key_says_what_to_set(crow_home, tmp_path):
    env = {k: v for k, v in crow_env(crow_home, "unused").items() if not k.startswith("OPENAI_")}
    done = await crow(env, "run", "hi", "--cwd", str(tmp_path))
    assert done.returncode == 3
    assert done.stderr.decode().startswith("crow: No model API key: set OPENAI_API_KEY in the environment")


async def test_a_broken_skill_and_a_dead_mcp_server_are_one_warning_each(crow_home, tmp_path):
    write_config(crow_home, '[mcp_servers.gone]\ncommand = "no-such-mcp-server-here"\n')
    broken = crow_home / "skills" / "broken"
    broken.mkdir(parents=True)
    (broken / "SKILL.md").write_text("no frontmatter\n")
    async with ScriptedModel([Reply(text="Fine.")]) as model:
        done = await crow(crow_env(crow_home, model.base_url), "run", "hi", "--cwd", str(tmp_path))
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode() == "Fine.\n"
    warnings = [line for line in done.stderr.decode().splitlines() if line.startswith("crow: warning: ")]
    assert len(warnings) == 2, warnings
    assert "skill skipped: " in warnings[0] and "broken/SKILL.md" in warnings[0]
    assert warnings[1].startswith("crow: warning: MCP server 'gone' is unavailable: command not found")
