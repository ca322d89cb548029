"""`crow run --mode`, `--allow` and `--deny`: one run's permissions, never written to config.toml.
--deny beats every rule; --allow beats ask rules but not a config rule that denies; the mode is put back."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from support.helpers import crow_command, crow_env, write_config

from crow_acp.store.sqlite import SqliteStore
from crow_acp.testing import Reply, ScriptedModel, ToolCall


def crow(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        crow_command(*args), env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=90
    )


def session_id(done: subprocess.CompletedProcess) -> str:
    return done.stderr.split("· session ")[-1].split("]")[0]


def tool_result(request: dict) -> str:
    return next(m["content"] for m in reversed(request["messages"]) if m["role"] == "tool")


def stored_mode(home: Path, sid: str) -> str:
    async def read() -> str:
        store = SqliteStore(home / "sessions.db")
        try:
            record = await store.get(sid)
        finally:
            await store.close()
        assert record is not None
        return record.data["mode"]

    return asyncio.run(read())


def write(name: str) -> Reply:
    return Reply(tool_calls=[ToolCall("write_file", {"path": name, "content": "hi\n"})])


def test_mode_plan_refuses_a_write_for_this_run_only(crow_home: Path, tmp_path: Path):
    script = [write("plan.txt"), Reply(text="Planned."), write("after.txt"), Reply(text="Wrote.")]
    with ScriptedModel(script, default=Reply(text="title")) as model:
        env = crow_env(crow_home, model.base_url)
        planned = crow(env, "run", "--mode", "plan", "--yes", "--cwd", str(tmp_path), "write it")
        sid = session_id(planned)
        mode_after_plan = stored_mode(crow_home, sid)
        again = crow(env, "run", "--session", sid, "--yes", "--cwd", str(tmp_path), "now write")
    assert planned.returncode == 0, planned.stderr
    assert not (tmp_path / "plan.txt").exists(), "plan mode refuses the write, even with --yes"
    assert tool_result(model.requests[1]).startswith("Plan mode: the tool 'write_file'")
    assert "You are in plan mode." in model.requests[0]["messages"][-2]["content"]  # told before the prompt
    assert mode_after_plan == "ask", "the run's mode is put back when it ends"
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "after.txt").read_text() == "hi\n", "the next run is in the session's own mode"
    assert not (crow_home / "config.toml").exists(), "nothing is written to config"


def test_deny_refuses_a_command_config_allows(crow_home: Path, tmp_path: Path):
    write_config(crow_home, '[permissions.tools]\nrun_command = "allow"\n')
    command = Reply(tool_calls=[ToolCall("run_command", {"command": "echo ran"})])
    script = [command, Reply(text="Done."), command, Reply(text="Done.")]
    with ScriptedModel(script, default=Reply(text="title")) as model:
        env = crow_env(crow_home, model.base_url)
        denied = crow(env, "run", "--deny", "run_*", "--cwd", str(tmp_path), "run it")
        allowed = crow(env, "run", "--cwd", str(tmp_path), "run it")
    assert denied.returncode == allowed.returncode == 0, denied.stderr + allowed.stderr
    assert tool_result(model.requests[1]) == "The tool 'run_command' is denied by the permission policy."
    assert "denied" not in tool_result(model.requests[3]), "without --deny, config's allow holds"
    assert (crow_home / "config.toml").read_text() == '[permissions.tools]\nrun_command = "allow"\n'


def test_allow_runs_without_asking_but_never_over_a_config_deny(crow_home: Path, tmp_path: Path):
    write_config(crow_home, '[permissions.tools]\n"edit_*" = "deny"\n')
    edit = ToolCall("edit_file", {"path": "a.txt", "old_string": "hi", "new_string": "bye"})
    script = [write("a.txt"), Reply(text="Wrote."), Reply(tool_calls=[edit]), Reply(text="Kept.")]
    with ScriptedModel(script, default=Reply(text="title")) as model:
        env = crow_env(crow_home, model.base_url)
        # No terminal to ask on: without --allow the write would be refused.
        wrote = crow(env, "run", "--allow", "write_file", "--cwd", str(tmp_path), "write")
        kept = crow(env, "run", "--allow", "*", "--yes", "--cwd", str(tmp_path), "edit")
    assert wrote.returncode == kept.returncode == 0, wrote.stderr + kept.stderr
    assert (tmp_path / "a.txt").read_text() == "hi\n"
    assert tool_result(model.requests[3]) == "The tool 'edit_file' is denied by the permission policy."
    assert (tmp_path / "a.txt").read_text() == "hi\n", "neither --allow nor --yes overrides a config deny"


def test_a_bad_mode_or_pattern_is_one_line(crow_home: Path, tmp_path: Path):
    env = crow_env(crow_home, "http://127.0.0.1:9/v1")
    mode = crow(env, "run", "--mode", "plann", "hi")
    assert mode.returncode == 2
    assert mode.stderr == (
        "crow: --mode 'plann' is not a mode: use one of ask, accept_edits, plan, auto, full_access; "
        "did you mean 'plan'?\n"
    )
    pattern = crow(env, "run", "--deny", "run_command(rm *)", "hi")
    assert pattern.returncode == 2 and len(pattern.stderr.splitlines()) == 1
    assert pattern.stderr.startswith("crow: --deny 'run_command(rm *)': a pattern is a tool name or an fnmatch")
    agent = crow(env, "run", "--agent", "no_such_module:agent", "--allow", "*", "hi")
    assert (
        agent.returncode == 2
        and agent.stderr == "crow: --allow and --deny set crow's own agent's rules, not an --agent's\n"
    )
    write_config(crow_home, '[permissions]\nrun_allow = ["*"]\n')
    in_config = crow(env, "run", "hi")
    assert in_config.returncode == 3 and "`crow run --allow` for one run" in in_config.stderr, in_config.stderr


def test_full_access_warns_once(crow_home: Path, tmp_path: Path):
    with ScriptedModel([write("f.txt"), Reply(text="Done.")], default=Reply(text="title")) as model:
        done = crow(crow_env(crow_home, model.base_url), "run", "--mode", "full_access", "--cwd", str(tmp_path), "go")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("--mode full_access: every tool runs without asking") == 1
    assert (tmp_path / "f.txt").exists()
