"""`crow setup` under a real pseudo-terminal: the key is never on the screen, a wrong key shows the
provider's own message and asks again, and Ctrl-C leaves nothing written."""

from __future__ import annotations

import os
import signal
import stat
from pathlib import Path

import pexpect
import pytest
from support.spawn import python as spawn_python

from crow_acp.testing import Reply, ScriptedModel

WRONG = "sk-wrong-key-0123456789"
RIGHT = "sk-right-key-9876543210"


def spawn_setup(home: Path, log: Path) -> pexpect.spawn:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "CROW_"))}
    child = pexpect.spawn(
        spawn_python(),
        ["-m", "crow", "setup"],
        env={**env, "CROW_HOME": str(home), "TERM": "xterm-256color"},
        encoding="utf-8",
        timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    child.logfile_read = open(log, "w")
    return child


def finish(child: pexpect.spawn, log: Path) -> tuple[int, str]:
    child.expect(pexpect.EOF)
    child.close()
    child.logfile_read.close()
    return child.exitstatus if child.exitstatus is not None else 128 + child.signalstatus, log.read_text()


def test_a_wrong_key_then_the_right_one_with_the_key_never_shown(crow_home, tmp_path):
    log = tmp_path / "screen.log"
    with ScriptedModel([Reply(text=".")]) as model:
        model.api_key = RIGHT
        child = spawn_setup(crow_home, log)
        child.expect_exact("Provider [1]: ")
        child.sendline("4")
        child.expect_exact("Base URL [")
        child.sendline(model.base_url)
        child.expect_exact("API key (input hidden, empty for none): ")
        child.sendline(WRONG)
        child.expect_exact("The model list could not be had: HTTP 401: Incorrect API key provided.")
        child.expect_exact("Model id: ")
        child.sendline("scripted-model")
        child.expect_exact("The provider said: HTTP 401: Incorrect API key provided.")
        child.expect_exact("API key (input hidden, empty for none): ")
        assert not (crow_home / "credentials.toml").exists()
        child.sendline(RIGHT)
        child.expect_exact("1. scripted-model")
        child.expect_exact("Model (a number or an id) [scripted-model]: ")
        child.sendline("")  # Enter: the model offered
        status, screen = finish(child, log)
    assert status == 0, screen
    assert "Stored custom" in screen
    assert WRONG not in screen and RIGHT not in screen
    path = crow_home / "credentials.toml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert f'api_key = "{RIGHT}"' in path.read_text()


@pytest.mark.parametrize("stage", ["provider", "key"])
def test_ctrl_c_leaves_nothing_written(crow_home, tmp_path, stage):
    log = tmp_path / "screen.log"
    child = spawn_setup(crow_home, log)
    child.expect_exact("Provider [1]: ")
    if stage == "key":
        child.sendline("2")
        child.expect_exact("API key (input hidden): ")
        child.send("sk-half-typed")
    child.sendintr()
    status, screen = finish(child, log)
    assert status == 130
    assert "Traceback" not in screen and "sk-half-typed" not in screen
    assert list(crow_home.iterdir()) == []
