"""A raw JSON-RPC MCP stdio server that breaks the wire on request (bytes, so it can break rules an
SDK server never would). Tools: `ping` (answers with its process id) and `hostile(mode)`:

    pair          valid and lone surrogate escapes, and an escaped backslash before "ud800"
    control       raw NUL and BEL bytes inside the text
    bad_utf8      bytes that are not UTF-8
    garbage       a line of binary garbage and a JSON array, then the answer
    huge          a 50 MB answer, its id first
    huge_tail     a 50 MB answer, its id last (the TypeScript SDK's key order)
    truncated     an answer line cut short
    deep          an answer nested 100,000 levels deep
    wrong_shape   a result that is a string
    bad_content   a result whose content is not a list
    bad_error     an error whose code is not a number
    duplicate     the answer twice, and an answer to an id nobody asked
    flood         1,000 log notifications, then the answer
    list_flood    1,000 tools/list_changed notifications, then the answer
    exit          exits without answering
    close_stdout  closes its stdout and keeps running
    orphan        leaves a detached grandchild holding its stdout (its pid in ./orphan.pid), then exits
    then_exit     answers, then exits (a server that dies while idle)

    --starts FILE    append the process id to FILE at every start
    --tools N        also list N more tools (a huge tools/list)
    --bad-schemas    also list tools whose input schema is not an object schema
    --lists FILE     append a line to FILE at every tools/list
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

OUT = sys.stdout.buffer
SCHEMA = {"type": "object", "properties": {"mode": {"type": "string"}}, "required": ["mode"]}
TOOLS = [
    {"name": "ping", "description": "Answer with the process id.", "inputSchema": {"type": "object"}},
    {"name": "hostile", "description": "Misbehave in the given mode.", "inputSchema": SCHEMA},
]
BAD_SCHEMAS = [
    {"name": "string_schema", "inputSchema": {"type": "string"}},
    {"name": "array_properties", "inputSchema": {"type": "object", "properties": [1, 2]}},
    {"name": "required_not_list", "inputSchema": {"type": "object", "required": "x"}},
]
HUGE = 50 * 1024 * 1024


def send(message: dict) -> None:
    write(json.dumps(message).encode() + b"\n")


def write(data: bytes) -> None:
    OUT.write(data)
    OUT.flush()


def answer(request_id: object, text_json: bytes) -> bytes:
    """A tools/call result line whose text is spliced in as raw JSON string bytes (quotes included)."""
    head = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": "@@"}]}})
    before, after = head.encode().split(b'"@@"')
    return before + text_json + after + b"\n"


def call(request_id: object, mode: str) -> None:
    raw = {
        "pair": rb'"pair \ud83d\ude00 low \udc00 high \ud800 end \\ud800"',
        "control": b'"nul \x00 bell \x07 end"',
        "bad_utf8": b'"bad \xff\xfe end"',
    }
    rid = json.dumps(request_id).encode()
    if mode in raw:
        write(answer(request_id, raw[mode]))
    elif mode == "garbage":
        write(bytes(b for b in range(256) if b != 10) + b"\n[1, 2, 3]\n" + answer(request_id, b'"after garbage"'))
    elif mode == "huge":
        write(answer(request_id, b'"' + b"h" * HUGE + b'"'))
    elif mode == "huge_tail":
        write(
            b'{"result": {"content": [{"type": "text", "text": "'
            + b"t" * HUGE
            + b'"}]}, "jsonrpc": "2.0", "id": '
            + rid
            + b"}\n"
        )
    elif mode == "truncated":
        write(answer(request_id, b'"cut short')[:-10] + b"\n")
    elif mode == "deep":
        write(answer(request_id, b'"x", "deep": ' + b"[" * 100_000 + b"]" * 100_000))
    elif mode == "wrong_shape":
        send({"jsonrpc": "2.0", "id": request_id, "result": "a string"})
    elif mode == "bad_content":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"content": "not a list"}})
    elif mode == "bad_error":
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": "x", "message": 5}})
    elif mode == "duplicate":
        write(answer(request_id, b'"first"') + answer(request_id, b'"second"') + answer(99999, b'"nobody asked"'))
    elif mode == "flood":
        note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x" * 100}}
        write((json.dumps(note) + "\n").encode() * 1_000 + answer(request_id, b'"after the flood"'))
    elif mode == "list_flood":
        note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        write((json.dumps(note) + "\n").encode() * 1_000 + answer(request_id, b'"after the list flood"'))
    elif mode == "exit":
        os._exit(3)
    elif mode == "close_stdout":
        os.close(1)
        time.sleep(3600)
    elif mode == "orphan":
        if (child := os.fork()) == 0:
            os.setsid()  # out of the guard's process group: the guard cannot kill it, and it holds stdout
            time.sleep(600)
            os._exit(0)
        with open("orphan.pid", "w") as pid:  # in the session's directory, for the test to end it
            pid.write(str(child))
        os._exit(4)
    elif mode == "then_exit":
        write(answer(request_id, b'"answered; exiting now"'))
        os._exit(0)
    else:
        write(answer(request_id, json.dumps(f"mode {mode}: fine").encode()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts")
    parser.add_argument("--tools", type=int, default=0)
    parser.add_argument("--bad-schemas", action="store_true")
    parser.add_argument("--lists")
    options = parser.parse_args()
    if options.starts:
        with open(options.starts, "a") as starts:
            starts.write(f"{os.getpid()}\n")
    tools = TOOLS + (BAD_SCHEMAS if options.bad_schemas else [])
    tools += [{"name": f"extra_{i}", "inputSchema": {"type": "object"}} for i in range(options.tools)]
    for raw in sys.stdin.buffer:
        message = json.loads(raw)
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "wire", "version": "0"}}})  # fmt: skip
        elif method == "tools/list":
            if options.lists:
                with open(options.lists, "a") as lists:
                    lists.write("listed\n")
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools}})
        elif method == "tools/call" and message["params"]["name"] == "ping":
            write(answer(request_id, json.dumps(f"pong from {os.getpid()}").encode()))
        elif method == "tools/call":
            call(request_id, message["params"]["arguments"].get("mode", ""))
        elif request_id is not None:
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})


if __name__ == "__main__":
    main()
