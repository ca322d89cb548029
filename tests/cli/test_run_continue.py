"""`crow run -c` with no prompt resumes this directory's latest session where crow's stop cut it off
(`/continue`, issue 31): a tool call left without result is answered "interrupted", and the model goes on."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from support.helpers import crow_command, crow_env

from crow_acp.core.session import INTERRUPTED
from crow_acp.history import EntryMeta, StoredMessage
from crow_acp.store import SessionRecord
from crow_acp.store.sqlite import SqliteStore
from crow_acp.testing import Reply, ScriptedModel

CALL = {"id": "call_cut", "type": "function", "function": {"name": "run_command", "arguments": '{"command": "ls"}'}}


def crow(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        crow_command(*args), env=env, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=90
    )


def seed_cut(home: Path, cwd: Path) -> None:
    """A session as a SIGKILL during a tool call leaves it: the call recorded, its result never."""

    async def write() -> None:
        store = SqliteStore(home / "sessions.db")
        store.create(SessionRecord("cutcut-session", str(cwd), "cut", 1000.0, 1000.0, {}))
        prompt = EntryMeta("prompt", blocks=[{"type": "text", "text": "list the files"}])
        store.append("cutcut-session", StoredMessage({"role": "user", "content": "list the files"}, prompt, row_id=1))
        calls = {"role": "assistant", "content": None, "tool_calls": [CALL]}
        store.append("cutcut-session", StoredMessage(calls, row_id=2))
        await store.flush()
        await store.close()

    asyncio.run(write())


def test_run_continue_without_a_prompt_resumes_the_cut_turn(crow_home: Path, tmp_path: Path):
    seed_cut(crow_home, tmp_path)
    with ScriptedModel([Reply(text="Resumed after the cut.")]) as model:
        env = crow_env(crow_home, model.base_url)
        resumed = crow(env, "run", "-c", cwd=tmp_path)
        finished = crow(env, "run", "--continue", cwd=tmp_path)  # the turn is over now: nothing to resume
    assert resumed.returncode == 0, resumed.stderr
    assert "Resumed after the cut." in resumed.stdout
    assert finished.returncode == 0, finished.stderr
    assert "Nothing to continue: the last turn finished." in finished.stdout
    assert len(model.requests) == 1
    messages = [m for m in model.requests[0]["messages"] if m["role"] != "system"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert messages[2] == {"role": "tool", "tool_call_id": "call_cut", "content": INTERRUPTED}


def test_run_without_a_prompt_or_a_session_is_a_usage_error(crow_home: Path, tmp_path: Path):
    bare = crow(crow_env(crow_home, "http://127.0.0.1:9/v1"), "run", cwd=tmp_path)
    assert bare.returncode == 2 and bare.stdout == ""
    assert (
        bare.stderr == "crow: the prompt is missing: give it as an argument, '-' to read it from stdin, or -c alone\n"
    )
