"""`crow run` under a real pseudo-terminal: live tool status, the permission prompt with its diff,
answers that fail closed, and Ctrl-C at each moment (exit 130, no traceback)."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pexpect
import pytest
from support.helpers import crow_env
from support.spawn import python as spawn_python

from crow_acp.testing import Reply, ScriptedModel, ToolCall

TIMEOUT = 60
STYLE = r"(?:\x1b\[[0-9;]*m)*"  # rich may switch styles between the words


def shown(*parts: str) -> str:
    """A pattern for these literal parts, in order, with any styling between them."""
    return STYLE.join(re.escape(part) for part in parts)


def spawn(env: dict[str, str], cwd: Path, *args: str) -> pexpect.spawn:
    child = pexpect.spawn(
        spawn_python(),
        ["-m", "crow", "run", "--cwd", str(cwd), *args],
        env={**env, "TERM": "xterm-256color"},
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(50, 120),
        preexec_fn=_ctrl_c_interrupts,
    )
    child.logfile_read = open(cwd / "screen.log", "w")  # read back for "no traceback" anywhere on screen
    return child


def _ctrl_c_interrupts() -> None:
    """Whatever started pytest (a background job ignores SIGINT), Ctrl-C reaches crow run as in a terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def finish(child: pexpect.spawn, cwd: Path) -> tuple[int, str]:
    child.expect(pexpect.EOF)
    child.close()
    child.logfile_read.close()
    return child.exitstatus, (cwd / "screen.log").read_text()


def write(path: str, content: str) -> ToolCall:
    return ToolCall("write_file", {"path": path, "content": content})


def test_live_status_and_the_permission_prompt_with_its_diff(crow_home, tmp_path):
    (tmp_path / "notes.txt").write_text("one\ntwo\n")
    script = [
        Reply(text="Updating the notes.", tool_calls=[write("notes.txt", "one\nTWO\n")]),
        Reply(tool_calls=[ToolCall("run_command", {"command": "echo be''gun; sleep 3; echo en''ded"})]),
        Reply(text="All done."),
    ]
    with ScriptedModel(script) as model:
        child = spawn(crow_env(crow_home, model.base_url), tmp_path, "update the notes")
        child.expect("Updating the notes.")
        child.expect(shown("Allow ", "Write notes.txt"))
        child.expect("-two")  # the diff, before anything is written
        child.expect(r"\+TWO")
        child.expect(r"\[N\] reject")
        assert (tmp_path / "notes.txt").read_text() == "one\ntwo\n"
        child.sendline("y")
        child.expect(shown("✓ ", "Write notes.txt"))
        child.expect(r"\+TWO")  # and the diff after it ran
        child.expect(re.escape("$ echo be''gun; sleep 3; echo en''ded"))
        child.sendline("y")
        child.expect(r"running \ds")  # a spinner with the elapsed time while the command runs
        child.expect("    begun")  # and the output's tail, live, before the command ends
        assert "ended" not in child.before
        child.expect(shown("✓ ", "`echo be''gun"))
        child.expect("All done.")
        status, screen = finish(child, tmp_path)
    assert status == 0, screen
    assert (tmp_path / "notes.txt").read_text() == "one\nTWO\n"
    assert "Traceback" not in screen and "INFO" not in screen, "no logs on the screen"


def test_only_a_clear_yes_allows(crow_home, tmp_path):
    answers = ["maybe", "", "n", "yess", None]  # None: Ctrl-D
    script = [Reply(tool_calls=[write(f"f{i}.txt", "x")]) for i in range(len(answers))]
    script += [Reply(tool_calls=[write("allowed.txt", "x")]), Reply(text="Finished.")]
    with ScriptedModel(script) as model:
        child = spawn(crow_env(crow_home, model.base_url), tmp_path, "write files")
        for answer in [*answers, "Y"]:
            child.expect(r"\[N\] reject: ")
            child.sendeof() if answer is None else child.sendline(answer)
        child.expect("Finished.")
        status, screen = finish(child, tmp_path)
    assert status == 0, screen
    assert [path.name for path in tmp_path.glob("*.txt")] == ["allowed.txt"]
    refusals = [r["messages"][-1]["content"] for r in model.requests[1 : len(answers) + 1]]
    assert all("rejected" in text for text in refusals), refusals


@pytest.mark.parametrize("moment", ["streaming", "permission", "tool"])
def test_ctrl_c_at_any_moment_exits_130_without_a_traceback(crow_home, tmp_path, moment):
    script = {
        "streaming": [Reply(text="word " * 2000, delay=0.02)],
        "permission": [Reply(tool_calls=[write("never.txt", "x")])],
        "tool": [Reply(tool_calls=[ToolCall("run_command", {"command": "sleep 60"})])],
    }[moment]
    with ScriptedModel(script, default=Reply(text="after")) as model:
        args = ["--yes"] if moment == "tool" else []
        child = spawn(crow_env(crow_home, model.base_url), tmp_path, "go", *args)
        child.expect({"streaming": "word word word", "permission": r"\[N\] reject", "tool": r"running \ds"}[moment])
        child.sendintr()
        child.expect("interrupted")
        status, screen = finish(child, tmp_path)
    assert status == 130, screen
    assert "Traceback" not in screen and "KeyboardInterrupt" not in screen
    assert not (tmp_path / "never.txt").exists()
    assert os.path.exists(crow_home / "logs" / "crow.log")


def test_ctrl_c_with_v_logs_no_failure_of_crows_own_shutdown(crow_home, tmp_path):
    with ScriptedModel([Reply(text="word " * 2000, delay=0.02)]) as model:
        child = spawn(crow_env(crow_home, model.base_url), tmp_path, "go", "-v")
        child.expect("word word word")
        child.sendintr()
        child.expect("interrupted")
        status, screen = finish(child, tmp_path)
    log = (crow_home / "logs" / "crow.log").read_text()
    assert status == 130, screen
    for shown in (screen, log):
        assert "Traceback" not in shown and "failed" not in shown, shown


def test_a_failed_command_a_relative_diff_header_and_the_cost_on_the_closing_line(crow_home, tmp_path):
    (crow_home / "config.toml").write_text(
        'model = "priced"\n[models.priced]\nmodel = "priced-id"\ninput_price = 2.0\noutput_price = 8.0\n'
    )
    usage = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}
    script = [
        Reply(tool_calls=[ToolCall("run_command", {"command": "echo partial; exit 3"})]),
        Reply(tool_calls=[write("hello.txt", "hi\n")]),
        Reply(text="Done.", usage=usage),
    ]
    with ScriptedModel(script) as model:
        child = spawn(crow_env(crow_home, model.base_url), tmp_path, "go", "--yes")
        child.expect(shown("✗ ", "`echo partial; exit 3`"))  # then the sandbox note; the line may wrap
        child.expect(shown("failed"))
        child.expect(r"·\s*exit 3")
        child.expect("--- a/hello.txt")
        child.expect(re.escape("[end_turn · 1,500 tokens · ") + r"0\.\d{4} USD · session ")
        status, screen = finish(child, tmp_path)
    assert status == 0, screen
    assert "a//" not in screen and "✓ `echo" not in screen


def test_escape_sequences_from_the_model_cannot_disguise_a_command(crow_home, tmp_path):
    sneaky = "echo harmless\x1b[2K\rrm -rf ~"
    script = [Reply(text="Trust me.\x1b]0;owned\x07", tool_calls=[ToolCall("run_command", {"command": sneaky})])]
    with ScriptedModel(script, default=Reply(text="ok")) as model:
        child = spawn(crow_env(crow_home, model.base_url), tmp_path, "go")
        child.expect(r"\[N\] reject: ")
        child.sendline("n")
        status, screen = finish(child, tmp_path)
    assert status == 0, screen
    assert "$ echo harmless\\x1b[2K\\x0drm -rf ~" in screen
    assert "\x1b]0;owned" not in screen and "\\x1b]0;owned\\x07" in screen


def test_an_always_answer_holds_when_the_session_is_continued(crow_home, tmp_path):
    """ "Always" is stored with the session (its data, bound to its roots): `crow run --continue` keeps it."""
    import subprocess

    from support.helpers import crow_command

    script = [
        Reply(tool_calls=[write("a.txt", "1\n")]),
        Reply(text="First."),
        Reply(tool_calls=[write("b.txt", "2\n")]),
        Reply(text="Second."),
    ]
    with ScriptedModel(script, default=Reply(text="title")) as model:
        env = crow_env(crow_home, model.base_url)
        child = spawn(env, tmp_path, "write a")
        child.expect(r"\[N\] reject: ")
        child.sendline("a")
        child.expect("First.")
        status, _ = finish(child, tmp_path)
        continued = subprocess.run(  # no terminal: a question would be refused
            crow_command("run", "--continue", "--cwd", str(tmp_path), "write b"),
            env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT,
        )  # fmt: skip
    assert status == 0
    assert continued.returncode == 0, continued.stderr
    assert (tmp_path / "b.txt").read_text() == "2\n", "the remembered answer allowed it without a question"
    assert "permission needed" not in continued.stderr
