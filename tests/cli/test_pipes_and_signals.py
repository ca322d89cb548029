"""Every command's output into a pipe whose reader went away (`| head`): crow ends by SIGPIPE, quietly, as `cat`
does. A SIGTERM with -v: the turn stops, and nothing of crow's own shutdown is logged as a failure."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest
from support.helpers import crow_command, crow_env

from crow_acp.testing import Reply, ScriptedModel, ToolCall

TIMEOUT = 60


def closed_pipe_run(env: dict[str, str], *args: str) -> tuple[int, str]:
    """Run crow with stdout into a pipe whose reader is already gone; its status and stderr."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            crow_command(*args), env=env, stdin=subprocess.DEVNULL, stdout=write_end, stderr=subprocess.PIPE,
            timeout=TIMEOUT, check=False,
        )  # fmt: skip
    finally:
        os.close(write_end)
    return done.returncode, done.stderr.decode()


def quiet(text: str) -> bool:
    return "Traceback" not in text and "BrokenPipe" not in text and "failed" not in text


@pytest.fixture
def stored(crow_home, tmp_path):
    """A model that writes many lines, and one session already stored by it."""
    with ScriptedModel([], default=Reply(text="a line\n" * 200)) as model:
        env = crow_env(crow_home, model.base_url)
        first = subprocess.run(crow_command("run", "hi", "--cwd", str(tmp_path)), env=env, capture_output=True)
        assert first.returncode == 0, first.stderr.decode()
        session = first.stderr.decode().rsplit("session ", 1)[1].split("]")[0]
        yield env, session


@pytest.mark.parametrize(
    "command",
    [["run", "hi"], ["run", "--format", "json", "hi"], ["sessions"], ["sessions", "show", "SID"], ["check"]],
    ids=["run", "run-json", "sessions", "sessions-show", "check"],
)
def test_a_pipe_closed_early_ends_the_command_by_sigpipe_without_a_traceback(stored, crow_home, tmp_path, command):
    env, session = stored
    args = [session if arg == "SID" else arg for arg in command]
    status, err = closed_pipe_run(env, *args, *(["--cwd", str(tmp_path)] if command[0] in ("run", "check") else []))
    assert status == -signal.SIGPIPE, err
    assert quiet(err), err
    assert quiet((crow_home / "logs" / "crow.log").read_text())


def test_head_2_stops_the_turn_at_the_next_write(crow_home, tmp_path):
    """`crow run ... | head -2`: the reader goes after two lines, mid-turn; crow stops the turn there."""
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    script = [
        Reply(text="one\ntwo\n", tool_calls=[ToolCall("run_command", {"command": f"cat {gate}"})]),
        Reply(text="three\n"),
    ]
    with ScriptedModel(script, default=Reply(text="never asked")) as model:
        read_end, write_end = os.pipe()
        run = subprocess.Popen(
            crow_command("run", "go", "--yes", "--cwd", str(tmp_path)), env=crow_env(crow_home, model.base_url),
            stdin=subprocess.DEVNULL, stdout=write_end, stderr=subprocess.PIPE,
        )  # fmt: skip
        os.close(write_end)
        with os.fdopen(read_end, "rb") as reader:
            assert reader.readline() == b"one\n"
            assert reader.readline() == b"two\n"
        gate.write_text("go\n")  # the command ends; the model's next reply meets a pipe with no reader
        _, err = run.communicate(timeout=TIMEOUT)
    assert run.returncode == -signal.SIGPIPE, err
    assert quiet(err.decode()), err
    assert len(model.requests) == 2, "the turn stopped: no request after the closed pipe"


def test_sigterm_with_v_logs_no_failure_of_crows_own_shutdown(crow_home, tmp_path):
    with ScriptedModel([Reply(text="word " * 2000, delay=0.02)]) as model:
        run = subprocess.Popen(
            crow_command("run", "-v", "go", "--cwd", str(tmp_path)), env=crow_env(crow_home, model.base_url),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            assert run.stdout is not None
            assert run.stdout.read(10) == b"word word "  # the turn is streaming
            run.send_signal(signal.SIGTERM)
            _, err = run.communicate(timeout=TIMEOUT)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
    assert run.returncode == -signal.SIGTERM, err
    screen, log = err.decode(), (crow_home / "logs" / "crow.log").read_text()
    assert "crow: interrupted" in screen
    assert quiet(screen), screen
    assert quiet(log), log
