"""A hand-written MCP stdio server that misbehaves on request: raw bytes, so it can break rules an
SDK server never would. One tool, `fault(mode)`; each mode answers tools/call its own broken way.

    text        a normal result (the control)
    bad_utf8    a result whose text holds bytes that are not UTF-8
    surrogate   a result whose text is a lone surrogate escape ("\\ud800")
    garbage     a line of binary garbage, then the normal result
    not_object  a JSON array line, then the normal result
    huge        a result with 5 MB of text
    exit        the server exits without answering
    hang        no answer, ever
"""

from __future__ import annotations

import json
import os
import sys
import time

OUT = sys.stdout.buffer
TOOL = {
    "name": "fault",
    "description": "Misbehave in the given mode.",
    "inputSchema": {"type": "object", "properties": {"mode": {"type": "string"}}, "required": ["mode"]},
    "annotations": {"readOnlyHint": True},
}


def send(message: dict) -> None:
    OUT.write(json.dumps(message).encode() + b"\n")
    OUT.flush()


def result(request_id: object, text_json: bytes) -> bytes:
    """A tools/call result line whose text is spliced in as raw JSON string bytes (quotes included)."""
    head = json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": "@@"}], "isError": False}}
    )
    before, after = head.encode().split(b'"@@"')
    return before + text_json + after + b"\n"


def call(request_id: object, mode: str) -> None:
    if mode == "exit":
        os._exit(3)
    if mode == "hang":
        time.sleep(3600)
    if mode == "garbage":
        OUT.write(bytes(b for b in range(256) if b != 10) + b"\n")
    if mode == "not_object":
        OUT.write(b"[1, 2, 3]\n")
    line = {
        "bad_utf8": result(request_id, b'"bad \xff\xfe bytes"'),
        "surrogate": result(request_id, b'"lone \\ud800 half"'),
        "huge": result(request_id, json.dumps("h" * 5_000_000).encode()),
    }.get(mode, result(request_id, json.dumps(f"mode {mode}: fine").encode()))
    OUT.write(line)
    OUT.flush()


def main() -> None:
    for raw in sys.stdin.buffer:
        message = json.loads(raw)
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "faulty", "version": "0"}}})  # fmt: skip
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": [TOOL]}})
        elif method == "tools/call":
            call(request_id, message["params"]["arguments"].get("mode", "text"))
        elif request_id is not None:
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})


if __name__ == "__main__":
    main()
