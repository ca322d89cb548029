"""The wire survives anything: hostile JSON-RPC lines over a real `crow acp` stdio, each followed by
a normal prompt on the same connection (issue 13 item 11)."""

from __future__ import annotations

import json

import pytest
from support.helpers import CORE_AGENT, crow_env
from support.raw_wire import RawCrow, raw_crow

from crow_acp.acp.rpc.wire import MAX_MESSAGE
from crow_acp.testing import Reply, ScriptedModel

pytestmark = pytest.mark.anyio
MiB = 1024 * 1024


def peak_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def request(request_id: int, method: str, params: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode() + b"\n"


# (name, bytes sent, the reply expected: (id, code), or None when the line gets no reply)
HOSTILE: list[tuple[str, bytes, tuple[object, int] | None]] = [
    ("binary garbage", bytes(b for b in range(256) if b != 10) * 64 + b"\n", (None, -32700)),
    ("invalid UTF-8 outside strings", b'{"jsonrpc":"2.0","id":1,\xff"method":"x"}\n', (None, -32700)),
    ("NUL bytes", b"\x00" * 1000 + b"\n", (None, -32700)),
    ("cut mid-object", b'{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":\n', (None, -32700)),
    ("a JSON array", b"[1,2,3]\n", (None, -32600)),
    ("a batch", b'[{"jsonrpc":"2.0","id":3,"method":"initialize"}]\n', (None, -32600)),
    ("a number", b"42\n", (None, -32600)),
    ("null", b"null\n", (None, -32600)),
    ("no method, no id", b'{"jsonrpc":"2.0","params":{}}\n', (None, -32600)),
    ("an object id", b'{"jsonrpc":"2.0","id":{"a":1},"method":"initialize","params":{}}\n', (None, -32600)),
    ("a list id", b'{"jsonrpc":"2.0","id":[1],"method":"initialize","params":{}}\n', (None, -32600)),
    ("a numeric method", b'{"jsonrpc":"2.0","id":4,"method":7,"params":{}}\n', (4, -32600)),
    ("NaN id", b'{"jsonrpc":"2.0","id":NaN,"method":"initialize"}\n', (None, -32700)),
    (
        "an endless number",
        b'{"jsonrpc":"2.0","id":5,"method":"x","params":{"n":' + b"9" * 100_000 + b"}}\n",
        (None, -32700),
    ),
    (
        "nested 100000 deep",
        b'{"jsonrpc":"2.0","id":6,"method":"x","params":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
        (None, -32600),
    ),
    (
        "nested 500 deep",
        request(7, "session/new", {"cwd": "/", "mcpServers": [], "_meta": json.loads("[" * 500 + "]" * 500)}),
        (7, -32600),
    ),
    ("a response nobody asked for", b'{"jsonrpc":"2.0","id":999999,"result":{}}\n', None),
    ("a response with a string error", b'{"jsonrpc":"2.0","id":999998,"error":"boom"}\n', None),
    ("a response with an object id", b'{"jsonrpc":"2.0","id":{"x":1},"result":1}\n', None),
    ("params a string", request(8, "session/new", "hello"), (8, -32602)),
    ("params null", request(9, "session/prompt", None), (9, -32602)),
    ("an unknown method", request(10, "no/such", {}), (10, -32601)),
    ("an unknown notification", b'{"jsonrpc":"2.0","method":"no/such","params":{}}\n', None),
    (
        "a huge string",
        request(11, "session/prompt", {"sessionId": "nope", "prompt": [{"type": "text", "text": "x" * (20 * MiB)}]}),
        (11, -32002),
    ),
    ("blank lines", b"\n\r\n   \n", None),
]

CWDS = [("empty", ""), ("relative", "some/dir"), ("dot", "."), ("NUL", "/tmp/a\x00b"), ("a number", 5), ("null", None)]


async def prompt_works(crow: RawCrow, session_id: str, word: str) -> object:
    """A normal prompt on the same connection ends normally; returns its request id."""
    prompt_id = await crow.send("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": word}]})
    reply = await crow.answer(prompt_id)
    assert reply["result"]["stopReason"] == "end_turn", reply
    return prompt_id


async def test_hostile_lines_get_errors_and_the_connection_still_prompts(crow_home, tmp_path):
    with ScriptedModel(default=Reply(text="fine")) as model:
        async with raw_crow(crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as crow:
            session_id = await crow.new_session(str(tmp_path))
            for name, data, expected in HOSTILE:
                before = len(crow.received)
                await crow.write(data)
                prompt_id = await prompt_works(crow, session_id, name)  # the same connection still prompts
                replies = [m for m in crow.received[before:] if "method" not in m and m.get("id") != prompt_id]
                if expected is None:
                    assert replies == [], name
                else:
                    assert [(m["id"], m["error"]["code"]) for m in replies] == [expected], name
            assert crow.proc.returncode is None
            assert len(model.requests) == len(HOSTILE)


async def test_cwd_must_be_a_nonempty_absolute_path_without_nul(crow_home, tmp_path):
    with ScriptedModel(default=Reply(text="fine")) as model:
        async with raw_crow(crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as crow:
            session_id = await crow.new_session(str(tmp_path))
            for method in ("session/new", "session/load", "session/resume"):
                for name, cwd in CWDS:
                    params = {"cwd": cwd, "mcpServers": [], "sessionId": session_id}
                    reply = await crow.call(method, params)
                    assert reply["error"]["code"] == -32602, (method, name, reply)
                missing = await crow.call(method, {"mcpServers": [], "sessionId": session_id})
                assert missing["error"]["code"] == -32602, method
            extra = await crow.call(
                "session/new", {"cwd": str(tmp_path), "mcpServers": [], "additionalDirectories": ["rel"]}
            )
            assert extra["error"]["code"] == -32602
            await prompt_works(crow, session_id, "still here")


async def test_a_60_mib_array_is_refused_without_costing_its_size(crow_home, tmp_path):
    with ScriptedModel(default=Reply(text="fine")) as model:
        async with raw_crow(crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as crow:
            session_id = await crow.new_session(str(tmp_path))
            await prompt_works(crow, session_id, "warm up")
            before = peak_rss_mib(crow.proc.pid)
            # The id comes first, so the refusal reaches the request's sender.
            head = b'{"jsonrpc":"2.0","id":77,"method":"session/prompt","params":{"sessionId":"x","prompt":['
            body = b"[0]," * (60 * MiB // 4)
            for start in range(0, len(body), 4 * MiB):
                await crow.write(head if start == 0 else b"")
                await crow.write(body[start : start + 4 * MiB])
            await crow.write(b"[0]]}}\n")
            reply = await crow.answer(77)
            assert reply["error"]["code"] == -32600 and str(MAX_MESSAGE) in reply["error"]["message"]
            # A line with no end at all, three times the limit: read and dropped piece by piece.
            for _ in range(3):
                await crow.write(b"7" * MAX_MESSAGE)
            await crow.write(b"\n")
            await prompt_works(crow, session_id, "after the flood")
            grown = peak_rss_mib(crow.proc.pid) - before
            # Buffering either line would cost over 160 MiB; the cap (32 MiB) and one piece may be held.
            assert grown < 120, f"peak memory grew by {grown:.0f} MiB"
            assert crow.unaddressed() == [-32600]


async def test_a_last_line_without_newline_is_answered_then_crow_exits_0(crow_home, tmp_path):
    with ScriptedModel(default=Reply(text="fine")) as model:
        async with raw_crow(crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as crow:
            await crow.write(request(5, "session/list", {})[:-1])  # no newline, then EOF
            assert crow.proc.stdin is not None
            crow.proc.stdin.close()
            assert await crow.drain_to_exit() == 0
            answers = [m for m in crow.received if m.get("id") == 5]
            assert len(answers) == 1 and "sessions" in answers[0]["result"]
