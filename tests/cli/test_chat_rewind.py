"""`crow chat` under a real pty: /rewind and Esc Esc (issue 31 item 2), through the agent's slash command."""

from __future__ import annotations

from support.helpers import crow_env
from test_chat import PROMPT, leave, say, spawn, started

from crow_acp.testing import Reply, ScriptedModel, ToolCall


def test_esc_esc_lists_the_messages_and_rewind_1_takes_the_file_back(crow_home, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / ".gitignore").write_text("screen.log\n")  # the test's own record of the screen
    script = [Reply(tool_calls=[ToolCall("write_file", {"path": "a.txt", "content": "a\n"})]), Reply(text="Wrote a.")]
    with ScriptedModel(script, default=Reply(text="ok")) as model:
        env = crow_env(crow_home, model.base_url)
        (crow_home / "config.toml").write_text('[permissions]\ndefault_mode = "accept_edits"\n')
        child = spawn(env, work, "chat")
        started(child)
        say(child, "write a")
        child.expect("Wrote a.")
        child.expect(PROMPT)
        child.send("\x1b\x1b")  # Esc Esc on the empty line
        child.expect(r"1\S* *(\x1b\[0m)?write a \(files changed since: a\.txt\)")  # a Markdown list, rendered
        child.expect(PROMPT)
        say(child, "/rewind 1")
        child.expect("Rewound the conversation and the files to before message 1")
        child.expect(PROMPT)
        say(child, "again")
        child.expect("ok")
        status, screen = leave(child, work)
    assert status == 0, screen
    assert not (work / "a.txt").exists()
    users = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "user"]
    assert users == ["again"]
    assert "Traceback" not in screen
