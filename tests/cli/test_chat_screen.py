"""`crow chat` on a real pty: Ctrl-C while an answer streams leaves it shown once (the terminal's "^C"
echo moved the cursor under the live region, which then erased the wrong lines), and /model names the
model id, not only the profile ("default")."""

from __future__ import annotations

import re

import pexpect
from support.helpers import crow_env
from test_chat import PROMPT, shown, spawn, started

from crow_acp.testing import Reply, ScriptedModel


def test_ctrl_c_while_streaming_echoes_nothing_and_model_names_the_id(crow_home, tmp_path):
    words = " ".join(f"w{i}" for i in range(2000))
    with ScriptedModel([Reply(text=words, delay=0.02)], default=Reply(text="unused")) as model:
        child = spawn(crow_env(crow_home, model.base_url), tmp_path, "chat")
        started(child)
        child.send("talk long\r")
        child.expect("w30 ")
        child.sendintr()
        child.expect(re.escape("[cancelled · "))
        child.expect(PROMPT)
        child.send("/model\r")
        child.expect(shown("model: default: gpt-4o-mini"))
        child.expect(PROMPT)
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
        child.logfile_read.close()
    screen = (tmp_path / "screen.log").read_text()
    assert child.exitstatus == 0, screen
    assert "^C" not in screen, "the terminal echoed Ctrl-C into the live region"
