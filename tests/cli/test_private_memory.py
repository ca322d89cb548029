"""Crow's memory is its own (issue 18 item 9): an allowed command cannot read crow's environment
through /proc, raw or in base64, and a key a command prints in base64 (at any offset of the stream,
wrapped or not) or in hex is redacted like the key itself, on the wire, to the model and in the store.

Crow runs under setpriv with no capabilities, as an ordinary user's process: root with
CAP_SYS_PTRACE reads any process's /proc files, dumpable or not."""

from __future__ import annotations

import base64
import json
import secrets
import shutil
from pathlib import Path

import pytest
from support.helpers import RecordingClient, crow_env, run_crow, text

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv")]
KEY = "sk-proc-" + secrets.token_hex(16)
MARK = "[redacted key]"
AS_USER = ("setpriv", "--bounding-set=-all", "--inh-caps=-all")


def forms(key: str) -> list[str]:
    """The key, its hex, and the part of its base64 that is the same at each offset mod 3."""
    raw = key.encode()
    shifted = [base64.b64encode(raw[skip:][: (len(raw) - skip) // 3 * 3]).decode() for skip in range(3)]
    return [key, raw.hex(), *shifted]


def leaks(blob: str) -> list[str]:
    unwrapped = blob.replace("\\n", "").replace("\n", "")
    return [form for form in forms(KEY) if form in unwrapped]


def stored(home: Path) -> str:
    files = [path for path in sorted(home.rglob("*")) if path.is_file() and path.name != "config.toml"]
    assert any(path.name.startswith("sessions.db") for path in files)
    return b"".join(path.read_bytes() for path in files).decode("utf-8", "replace")


async def test_a_command_gets_no_key_from_crows_proc_files_nor_from_encoding_one(tmp_path):
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    for skip in range(3):  # the key at each offset mod 3 of a base64 stream
        (work / f"k{skip}").write_text("ab"[:skip] + KEY + "\n")
    client = RecordingClient()
    with ScriptedModel(default=Reply(text="done")) as model:
        env = crow_env(home, model.base_url, OPENAI_API_KEY=KEY)
        async with run_crow(client, env, cwd=str(work), wrapper=AS_USER) as (conn, proc):
            proc_files = f"cat /proc/{proc.pid}/environ; base64 /proc/{proc.pid}/environ; echo read-done"
            encodings = (
                "for f in k0 k1 k2; do base64 $f; base64 -w0 $f; echo; od -An -v -tx1 $f | tr -d ' \\n'; echo; done"
            )
            model.add(Reply(tool_calls=[ToolCall("run_command", {"command": proc_files}, id="proc"),
                                        ToolCall("run_command", {"command": encodings}, id="enc")]))  # fmt: skip
            session_id = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            assert (await conn.prompt(session_id=session_id, prompt=[text("go")])).stop_reason == "end_turn"
    results = {m["tool_call_id"]: m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool"}
    assert "Permission denied" in results["proc"] and "read-done" in results["proc"]
    assert results["enc"].count(MARK) == 9  # three files, three encodings each
    assert leaks(json.dumps(model.requests)) == []
    assert leaks(repr(client.updates)) == []
    assert leaks(stored(home)) == []
