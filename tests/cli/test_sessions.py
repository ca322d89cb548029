"""`crow sessions` lists stored sessions, prints one as a transcript, and deletes one."""

from __future__ import annotations

import subprocess
from pathlib import Path

from support.helpers import crow_command, crow_env, echo_toml, write_config

from crow_acp.testing import Reply, ScriptedModel, ToolCall


def crow(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        crow_command(*args), env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=90
    )


def session_id(done: subprocess.CompletedProcess) -> str:
    return done.stderr.split("· session ")[-1].split("]")[0]


def test_list_show_and_delete(crow_home: Path, tmp_path: Path):
    write_config(crow_home, echo_toml())
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    script = [
        Reply(text="Adding.", reasoning="Use the tool.", tool_calls=[ToolCall("echo__add", {"a": 40, "b": 2})]),
        Reply(text="It is 42."),
        Reply(text="Hello there.\x1b[2J\x1b]0;owned\x07"),  # escape sequences from a hostile model
    ]
    with ScriptedModel(script, default=Reply(text="title")) as model:
        env = crow_env(crow_home, model.base_url)
        first = crow(env, "run", "what is 40 + 2?", "--yes", "--cwd", str(tmp_path / "a"))
        second = crow(env, "run", "say hello", "--cwd", str(tmp_path / "b"))
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    one, two = session_id(first), session_id(second)

    listing = crow(env, "sessions")
    assert listing.returncode == 0, listing.stderr
    rows = listing.stdout.splitlines()
    assert rows[0].split() == ["id", "updated", "title", "directory"]
    assert [row.split()[0] for row in rows[1:]] == [two, one], "most recently updated first"
    assert rows[2].endswith(str(tmp_path / "a")) and rows[1].endswith(str(tmp_path / "b"))

    shown = crow(env, "sessions", "show", one)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert f"session {one}" in text and f"directory {tmp_path / 'a'}" in text
    order = ["> what is 40 + 2?", "│ Use the tool.", "Adding.", "⚙ add (echo) [completed]", "  42", "It is 42."]
    positions = [text.index(part) for part in order]
    assert positions == sorted(positions), text

    hello = crow(env, "sessions", "show", two).stdout
    assert "\x1b" not in hello and "\x07" not in hello, "a replayed session cannot rewrite the terminal"
    assert "Hello there.\\x1b[2J\\x1b]0;owned\\x07" in hello

    deleted = crow(env, "sessions", "delete", one)
    assert deleted.returncode == 0 and deleted.stdout == f"deleted session {one}\n", deleted.stderr
    assert [row.split()[0] for row in crow(env, "sessions").stdout.splitlines()[1:]] == [two]
    gone = crow(env, "sessions", "show", one)
    assert gone.returncode == 2 and gone.stderr == f"crow: no stored session '{one}' (`crow sessions` lists them)\n"


def test_mistakes_are_one_line(crow_home: Path):
    env = crow_env(crow_home, "http://127.0.0.1:9/v1")
    assert crow(env, "sessions").stdout == "no stored sessions\n"
    missing = crow(env, "sessions", "delete")
    assert (
        missing.returncode == 2
        and missing.stderr == "crow: crow sessions delete needs a session id (`crow sessions` lists them)\n"
    )
    unknown = crow(env, "sessions", "delete", "nope")
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr
