"""Coming back to a session from the command line: ids by unique prefix (6 characters or more) wherever an id
is taken, `crow run --continue` (this directory's latest session, never another directory's) and
`--session`, and `crow --continue` / `crow --resume` opening the conversation in it (`crow chat`)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import time
from pathlib import Path

import pexpect
from support.helpers import crow_command, crow_env

from crow_acp.history import StoredMessage
from crow_acp.store import SessionRecord
from crow_acp.store.sqlite import SqliteStore
from crow_acp.testing import Reply, ScriptedModel


def crow(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        crow_command(*args), env=env, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=90
    )


def seed(home: Path, sessions: list[tuple[str, Path, str, float]]) -> None:
    """Stored sessions with chosen ids: (id, cwd, title, updated_at), each with one prompt."""

    async def write() -> None:
        store = SqliteStore(home / "sessions.db")
        for sid, cwd, title, updated in sessions:
            store.create(SessionRecord(sid, str(cwd), title, updated, updated, {}))
            store.append(sid, StoredMessage({"role": "user", "content": f"hello from {title}"}, row_id=1))
            store.append(sid, StoredMessage({"role": "assistant", "content": f"answer in {title}"}, row_id=2))
        await store.flush()
        await store.close()

    asyncio.run(write())
    # append() touched updated_at: set the chosen times, so "latest" is decided by them.
    import sqlite3

    with sqlite3.connect(home / "sessions.db") as db:
        db.executemany("UPDATE sessions SET updated_at = ? WHERE id = ?", [(s[3], s[0]) for s in sessions])


def test_show_and_delete_take_a_unique_prefix(crow_home: Path, tmp_path: Path):
    seed(crow_home, [("abcdef111111", tmp_path, "first", 1000.0), ("abcdef222222", tmp_path, "second", 2000.0)])
    env = crow_env(crow_home, "http://127.0.0.1:9/v1")
    shown = crow(env, "sessions", "show", "abcdef1")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("session abcdef111111 · first\n") and "> hello from first" in shown.stdout

    ambiguous = crow(env, "sessions", "show", "abcdef")
    assert ambiguous.returncode == 2 and ambiguous.stdout == ""
    line, *rest = ambiguous.stderr.splitlines()
    assert rest == [] and line.startswith("crow: session prefix 'abcdef' is ambiguous: "), ambiguous.stderr
    assert line.index("abcdef222222 (second, ") < line.index("abcdef111111 (first, "), "most recently updated first"
    assert f", {tmp_path}, " in line and line.endswith("; give more of the id")

    short = crow(env, "sessions", "show", "abcde")
    assert short.returncode == 2
    assert (
        short.stderr
        == "crow: no stored session 'abcde'; a prefix needs 6 characters or more (`crow sessions` lists them)\n"
    )
    unknown = crow(env, "sessions", "delete", "abcdef9")
    assert (
        unknown.returncode == 2 and unknown.stderr == "crow: no stored session 'abcdef9' (`crow sessions` lists them)\n"
    )

    deleted = crow(env, "sessions", "delete", "abcdef2")
    assert deleted.returncode == 0 and deleted.stdout == "deleted session abcdef222222\n", deleted.stderr
    assert [row.split()[0] for row in crow(env, "sessions").stdout.splitlines()[1:]] == ["abcdef111111"]


def test_like_wildcards_in_a_prefix_match_only_themselves(crow_home: Path, tmp_path: Path):
    seed(crow_home, [("ab%_cd-one", tmp_path, "wild", 1000.0), ("abXYcd-two", tmp_path, "tame", 2000.0)])
    env = crow_env(crow_home, "http://127.0.0.1:9/v1")
    wild = crow(env, "sessions", "show", "ab%_cd")
    assert wild.returncode == 0 and wild.stdout.startswith("session ab%_cd-one · wild\n"), wild.stderr
    broad = crow(env, "sessions", "show", "ab____")  # `_` is a LIKE wildcard: unescaped, it would match both
    assert broad.returncode == 2 and broad.stderr.startswith("crow: no stored session 'ab____'"), broad.stderr
    upper = crow(env, "sessions", "show", "ABXYCD")  # SQLite's LIKE ignores case; ids do not
    assert upper.returncode == 2, upper.stdout


def test_run_continue_picks_this_directorys_latest_and_session_takes_a_prefix(crow_home: Path, tmp_path: Path):
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    now = time.time()
    seed(
        crow_home,
        [
            ("aaaaaa-old-here", here, "old here", now - 7200),
            ("bbbbbb-new-here", here, "new here", now - 3600),
            ("cccccc-elsewhere", elsewhere, "elsewhere", now),  # newer, in another directory: never chosen
        ],
    )
    with ScriptedModel([Reply(text="Continued."), Reply(text="Chosen.")]) as model:
        env = crow_env(crow_home, model.base_url)
        continued = crow(env, "run", "-c", "again", cwd=here)
        chosen = crow(env, "run", "--session", "aaaaaa-o", "--cwd", str(here), "and again")
        empty = tmp_path / "empty"
        empty.mkdir()
        nothing = crow(env, "run", "--continue", "hi", "--cwd", str(empty))
    assert continued.returncode == 0, continued.stderr
    assert continued.stderr.splitlines()[-1].endswith("· session bbbbbb-new-here]"), continued.stderr
    first, second = ([m["content"] for m in r["messages"] if m["role"] != "system"] for r in model.requests)
    assert first == ["hello from new here", "answer in new here", "again"]
    assert chosen.returncode == 0, chosen.stderr
    assert second == ["hello from old here", "answer in old here", "and again"]
    assert nothing.returncode == 2 and len(model.requests) == 2
    assert (
        nothing.stderr == f"crow: no stored session in {empty} to continue (`crow sessions` lists every directory's)\n"
    )


def test_run_refuses_continue_with_session_and_an_ambiguous_prefix(crow_home: Path, tmp_path: Path):
    seed(crow_home, [("dddddd-1", tmp_path, "one", 1000.0), ("dddddd-2", tmp_path, "two", 2000.0)])
    env = crow_env(crow_home, "http://127.0.0.1:9/v1")
    both = crow(env, "run", "-c", "--session", "dddddd-1", "hi")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
    ambiguous = crow(env, "run", "--session", "dddddd", "--cwd", str(tmp_path), "hi")
    assert ambiguous.returncode == 2 and ambiguous.stderr.startswith("crow: session prefix 'dddddd' is ambiguous: ")
    assert len(ambiguous.stderr.splitlines()) == 1
    agent = crow(env, "run", "--agent", "no_such_module:agent", "-c", "hi")  # its sessions may live elsewhere
    assert agent.returncode == 2 and agent.stderr == (
        "crow: --continue looks in crow's own store; with --agent, give --session and the whole id\n"
    )


def test_top_level_continue_and_resume_need_a_terminal(crow_home: Path, tmp_path: Path):
    """`crow -c` and `crow --resume` are the conversation (`crow chat -c`, `crow chat --resume`): not in a pipe."""
    seed(crow_home, [("eeeeee-here", tmp_path, "here", 1000.0)])
    env = crow_env(crow_home, "http://127.0.0.1:9/v1")
    continued = crow(env, "--continue", cwd=tmp_path)
    resumed = crow(env, "--resume", "eeeeee", cwd=tmp_path)
    picker = crow(env, "--resume", cwd=tmp_path)  # stdin is not a terminal
    assert continued.returncode == resumed.returncode == picker.returncode == 2
    assert continued.stderr.startswith("crow: crow chat needs a terminal"), continued.stderr
    assert resumed.stderr.startswith("crow: crow chat needs a terminal"), resumed.stderr
    assert picker.stderr == (
        "crow: --resume without an id picks on a terminal; stdin is not one: give an id (`crow sessions` lists them)\n"
    )
    bare = crow(env)
    assert bare.returncode == 2 and "the following arguments are required: COMMAND" in bare.stderr


def chat_child(env: dict[str, str], cwd: Path, *args: str) -> pexpect.spawn:
    command = crow_command(*args)
    return pexpect.spawn(
        command[0],
        command[1:],
        env={**env, "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1"},
        cwd=str(cwd),
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 120),
    )


def leave_chat(child: pexpect.spawn) -> None:
    child.expect(re.escape("\x1b[?2004h"))  # the line editor reads
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_continue_opens_this_directorys_latest_session_in_the_conversation(crow_home: Path, tmp_path: Path):
    """Yesterday's session here is continued; a newer one in another directory is not chosen."""
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir(), elsewhere.mkdir()
    yesterday = time.time() - 86400
    seed(
        crow_home,
        [
            ("aaaaaa-old-here", here, "older", yesterday - 3600),
            ("bbbbbb-yesterday", here, "yesterday", yesterday),
            ("cccccc-elsewhere", elsewhere, "newer elsewhere", time.time()),
        ],
    )
    child = chat_child(crow_env(crow_home, "http://127.0.0.1:9/v1"), here, "--continue")
    child.expect(r"answer in yesterday")  # the resumed history, shown compactly
    child.expect(r"session (\S+) · /help")
    assert child.match.group(1) == "bbbbbb-yesterday"
    leave_chat(child)


def test_resume_in_the_conversation_takes_a_prefix_and_lists_an_ambiguous_one(crow_home: Path, tmp_path: Path):
    seed(
        crow_home,
        [("dddddd-one", tmp_path, "first", 1000.0), ("dddddd-two", tmp_path, "second", 2000.0)],
    )
    child = chat_child(crow_env(crow_home, "http://127.0.0.1:9/v1"), tmp_path, "chat")
    child.expect(r"session \S+ · /help")
    child.expect(re.escape("\x1b[?2004h"))
    child.send("/resume dddddd\r")
    child.expect(r"'dddddd' is the start of 2 sessions")
    child.expect(re.escape("\x1b[?2004h"))
    child.send("/resume dddddd-o\r")
    child.expect(r"answer in first")
    leave_chat(child)


def test_the_picker_numbers_this_directorys_sessions(crow_home: Path, tmp_path: Path):
    seed(
        crow_home,
        [
            ("111111-a", tmp_path, "alpha", 1000.0),
            ("222222-b", tmp_path, "beta", 2000.0),
            ("333333-c", tmp_path / "crow-home", "other", 3000.0),  # another directory: not offered
        ],
    )
    env = crow_env(crow_home, "http://127.0.0.1:9/v1")
    child = chat_child(env, tmp_path, "--resume")
    child.expect(r"resume which session \(1-2\)\? ")
    listed = child.before.splitlines()
    assert [line.split()[:2] for line in listed if line.strip()] == [["1", "222222-b"], ["2", "111111-a"]]
    child.sendline("2")
    child.expect(r"answer in alpha")  # the conversation opens in the session picked
    child.expect(r"session 111111-a · /help")
    leave_chat(child)
    assert os.path.exists(crow_home / "sessions.db")
