"""No poisoned sessions (issue 13 item 6): invalid Unicode from the user, the model, a tool or a
callback, or already in sessions.db, is repaired at the boundary; the next prompt always works and
every model request is valid UTF-8 JSON. Driven over a real `crow acp` stdio."""

from __future__ import annotations

import json
import sqlite3
import sys

import pytest
from support.helpers import CORE_AGENT, TESTS, crow_env, echo_entry, write_config
from support.history_checks import assert_history_valid, assert_requests_valid, assert_valid_unicode
from support.raw_wire import RawCrow, raw_crow

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio
UNICODE_AGENT = str(TESTS / "agents" / "unicode_agent.py") + ":build"


def prompt_line(request_id: int, session_id: str, raw_text: bytes) -> bytes:
    """A session/prompt line whose text is spliced in raw (JSON escapes or bytes as given)."""
    head = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "session/prompt",
            "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": "TEXT"}]},
        }
    )
    before, after = head.encode().split(b"TEXT")
    return before + raw_text + after + b"\n"


async def ends_normally(crow: RawCrow, session_id: str, text: str = "next") -> None:
    reply = await crow.prompt(session_id, text)
    assert reply["result"]["stopReason"] == "end_turn", reply


def user_texts(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


async def test_lone_surrogates_and_bad_bytes_from_the_user(crow_home, tmp_path):
    with ScriptedModel(default=Reply(text="fine")) as model:
        async with raw_crow(crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as crow:
            session_id = await crow.new_session(str(tmp_path))
            await crow.write(
                prompt_line(1, session_id, rb"lone \ud800 and \udc00, a pair \ud83d\ude00, reversed \udc00\ud800")
            )
            assert (await crow.answer(1))["result"]["stopReason"] == "end_turn"
            await crow.write(prompt_line(2, session_id, b"bytes \xff\xfe\xed\xa0\x80 end"))
            assert (await crow.answer(2))["result"]["stopReason"] == "end_turn"
            await ends_normally(crow, session_id)
            listed = await crow.call("session/list", {})
        assert_valid_unicode(listed, "session/list")
        assert listed["result"]["sessions"][0]["title"].startswith("lone \ufffd and \ufffd, a pair \U0001f600")
    texts = user_texts(model.requests[-1])
    assert texts[0] == "lone \ufffd and \ufffd, a pair \U0001f600, reversed \ufffd\ufffd"
    assert texts[1].startswith("bytes \ufffd") and texts[1].endswith(" end")
    assert texts[2] == "next"
    assert_requests_valid(model.requests)
    assert_history_valid(crow_home, session_id)


async def test_surrogate_pairs_split_across_stream_chunks(crow_home, tmp_path):
    emoji = "\ud83d\ude00"  # two code points in Python: each chunk's JSON carries one escaped half
    script = [
        Reply(text=f"ok {emoji}!", reasoning=f"think {emoji}", chunks=len(f"ok {emoji}!")),
        Reply(text="lone \udc00 then a cut half \ud83d", chunks=40),
        Reply(tool_calls=[ToolCall("echo__echo", '{"text": "pair ' + emoji * 8 + '"}', id="e1")]),
        Reply(text="done"),
    ]
    with ScriptedModel(script, default=Reply(text="fine")) as model:
        async with raw_crow(crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as crow:
            reply = await crow.call("session/new", {"cwd": str(tmp_path), "mcpServers": [echo_entry()]})
            session_id = reply["result"]["sessionId"]
            await ends_normally(crow, session_id, "first")
            chunks = [u["content"]["text"] for u in crow.updates if u["sessionUpdate"] == "agent_message_chunk"]
            assert "".join(chunks) == "ok \U0001f600!"
            await ends_normally(crow, session_id, "second")
            await ends_normally(crow, session_id, "third")
            await ends_normally(crow, session_id)
    messages = assert_history_valid(crow_home, session_id)
    assistant = [m["content"] for m in messages if m["role"] == "assistant"]
    assert assistant[:2] == ["ok \U0001f600!", "lone \ufffd then a cut half \ufffd"]
    results = [m["content"] for m in messages if m["role"] == "tool"]
    assert results == ["echo: pair " + "\U0001f600" * 8]
    assert_requests_valid(model.requests)


async def test_bad_text_from_a_tool_call_and_a_callback(crow_home, tmp_path):
    script = [
        Reply(tool_calls=[ToolCall("echo__echo", r'{"text": "lone \ud800 half"}', id="bad")]),
        Reply(text="after the tool"),
        Reply(text="after the callback"),
    ]
    with ScriptedModel(script, default=Reply(text="fine")) as model:
        async with raw_crow(crow_env(crow_home, model.base_url), "--agent", UNICODE_AGENT) as crow:
            reply = await crow.call("session/new", {"cwd": str(tmp_path), "mcpServers": [echo_entry()]})
            session_id = reply["result"]["sessionId"]
            await ends_normally(crow, session_id, "use the tool")
            await ends_normally(crow, session_id, "POISON please")
            await ends_normally(crow, session_id)
    messages = assert_history_valid(crow_home, session_id)
    assert messages[0] == {"role": "system", "content": "system prompt \ufffd with a lone half"}
    assert "a note from a callback \ufffd with a lone half" in [m["content"] for m in messages]
    assert [(m["tool_call_id"], m["content"]) for m in messages if m["role"] == "tool"] == [
        ("bad", "echo: lone \ufffd half")
    ]
    with sqlite3.connect(crow_home / "sessions.db") as db:
        (data,) = db.execute("SELECT data FROM sessions WHERE id = ?", (session_id,)).fetchone()
    assert json.loads(data)["context"]["note"] == {"bad \ufffd key": ["value \ufffd"]}
    assert_requests_valid(model.requests)


async def test_a_stored_session_with_invalid_unicode_is_repaired_on_load(crow_home, tmp_path):
    with ScriptedModel(default=Reply(text="fine", reasoning="because")) as model:
        env = crow_env(crow_home, model.base_url)
        async with raw_crow(env, "--agent", CORE_AGENT) as crow:
            session_id = await crow.new_session(str(tmp_path))
            await ends_normally(crow, session_id, "hello")
        # Poison the rows as an older crow (or another tool) could have written them.
        with sqlite3.connect(crow_home / "sessions.db") as db:
            rows = db.execute("SELECT seq, message, extra FROM messages WHERE session_id = ?", (session_id,)).fetchall()
            for row_id, message, extra in rows:
                message = message.replace("hello", r"hel\ud800lo").replace("fine", r"fi\udfffne")
                extra = extra.replace("because", r"be\ud83dcause").replace("hello", r"hel\ud800lo")
                db.execute(
                    "UPDATE messages SET message = ?, extra = ? WHERE session_id = ? AND seq = ?",
                    (message, extra, session_id, row_id),
                )
            db.execute(
                "UPDATE sessions SET data = ? WHERE id = ?", (json.dumps({"context": {"k": "\ud800"}}), session_id)
            )
        async with raw_crow(env, "--agent", CORE_AGENT) as crow:
            reply = await crow.call("session/load", {"cwd": str(tmp_path), "sessionId": session_id, "mcpServers": []})
            assert "result" in reply, reply
            replayed = [u for u in crow.updates if u["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk")]
            assert [u["content"]["text"] for u in replayed] == ["hel\ufffdlo", "fi\ufffdne"]
            await ends_normally(crow, session_id, "and now?")
    messages = assert_history_valid(crow_home, session_id)  # the rows themselves were rewritten
    assert [m["content"] for m in messages] == ["hel\ufffdlo", "fi\ufffdne", "and now?", "fine"]
    assert user_texts(model.requests[-1]) == ["hel\ufffdlo", "and now?"]
    assert_requests_valid(model.requests)


async def test_bytes_that_are_not_utf8_from_an_mcp_server(crow_home, tmp_path):
    """The server's reader replaces them; before, one bad byte silently broke every later call to that server."""
    faulty = {
        "name": "faulty",
        "command": sys.executable,
        "args": [str(TESTS / "mcp_servers" / "faulty_server.py")],
        "env": [],
    }
    calls = [ToolCall("faulty__fault", {"mode": mode}, id=mode) for mode in ("bad_utf8", "text")]
    script = [Reply(tool_calls=calls[:1]), Reply(text="one"), Reply(tool_calls=calls[1:]), Reply(text="two")]
    write_config(crow_home, "[timeouts]\nmcp_call = 30\n")
    with ScriptedModel(script, default=Reply(text="fine")) as model:
        async with raw_crow(crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as crow:
            reply = await crow.call("session/new", {"cwd": str(tmp_path), "mcpServers": [faulty]})
            session_id = reply["result"]["sessionId"]
            await ends_normally(crow, session_id, "bad bytes")
            await ends_normally(crow, session_id, "then a normal call")
    results = {
        m["tool_call_id"]: m["content"] for m in assert_history_valid(crow_home, session_id) if m["role"] == "tool"
    }
    assert results == {"bad_utf8": "bad \ufffd\ufffd bytes", "text": "mode text: fine"}
    assert_requests_valid(model.requests)
