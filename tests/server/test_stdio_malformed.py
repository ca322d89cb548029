"""Raw JSON-RPC on crow's stdin: malformed input never kills the server or dirties stdout."""

from __future__ import annotations

import asyncio
import json
import sys

import anyio
import pytest
from support.helpers import crow_env

pytestmark = pytest.mark.anyio

INITIALIZE = {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
LINES = [
    "this is not JSON at all",
    '{"jsonrpc": "2.0", "method": "session/new", "params": {"cwd": ',  # cut mid-object
    '{"hello": "world"}',  # JSON, not JSON-RPC
    "[1, 2, 3]",  # JSON that is not an object: used to kill the SDK's receive loop
    "42",
    '"a string"',
    "",
    json.dumps({"jsonrpc": "2.0", "id": 1, "method": "no/such_method", "params": {}}),
    json.dumps({"jsonrpc": "2.0", "method": "no/such_notification", "params": {}}),
    json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": 5}}),
    json.dumps({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": "x", "prompt": "no"}}),
    json.dumps({"jsonrpc": "2.0", "id": 4, "method": "session/prompt", "params": {"sessionId": "nope", "prompt": []}}),
    json.dumps({"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": INITIALIZE}),
]


async def test_malformed_input_gets_errors_and_the_server_stays_up(crow_home):
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "crow",
        "acp",
        env=crow_env(crow_home, "http://127.0.0.1:9/v1"),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert proc.stdin and proc.stdout
    try:
        proc.stdin.write("".join(line + "\n" for line in LINES).encode())
        await proc.stdin.drain()
        answers, unaddressed = {}, []
        with anyio.fail_after(20):
            while len(answers) < 5:
                line = await proc.stdout.readline()
                assert line, "crow closed stdout"
                message = json.loads(line)  # every byte on stdout is protocol
                if message["id"] is None:
                    unaddressed.append(message["error"]["code"])
                else:
                    answers[message["id"]] = message
        assert proc.returncode is None
        # Lines that cannot be requests get a reply with a null id: parse error, or invalid request.
        assert unaddressed == [-32700, -32700, -32600, -32600, -32600, -32600]
        assert answers[1]["error"]["code"] == -32601
        assert answers[2]["error"]["code"] == -32602
        assert answers[3]["error"]["code"] == -32602
        assert answers[4]["error"]["code"] == -32002  # unknown session: an error, not an empty success
        result = answers[5]["result"]
        assert result["protocolVersion"] == 1 and result["agentCapabilities"]["loadSession"] is True

        # closing stdin is how the editor says goodbye: crow exits cleanly and says nothing more
        proc.stdin.close()
        with anyio.fail_after(10):
            rest = await proc.stdout.read()
            assert await proc.wait() == 0
        assert rest == b""
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
