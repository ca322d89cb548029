"""A raw MCP server over HTTP (standard library only) whose answers carry lone surrogate escapes,
which no SDK server would send. One tool, `hostile(mode)`:

    json       streamable HTTP: the answer as an application/json body
    sse        streamable HTTP: the answer as one event of a text/event-stream body
    exit       the server process exits mid-call
    legacy     the answer on the legacy SSE transport's event stream (GET /sse, POST /messages)
    any other  a normal answer

    python wire_http_server.py PORT      (serves http://127.0.0.1:PORT/mcp and http://127.0.0.1:PORT/sse)
"""

from __future__ import annotations

import json
import os
import queue
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

EVENTS: queue.Queue[bytes] = queue.Queue()  # the legacy SSE stream's events (one client at a time)

TOOL = {"name": "hostile", "inputSchema": {"type": "object", "properties": {"mode": {"type": "string"}}}}
BROKEN = rb'"lone \ud800 half, pair \ud83d\ude00"'


def answer(request_id: object, text_json: bytes) -> bytes:
    head = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": "@@"}]}})
    before, after = head.encode().split(b'"@@"')
    return before + text_json + after


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        method, request_id = message.get("method"), message.get("id")
        if self.path.startswith("/messages"):  # legacy SSE: the answer goes on the event stream
            if method == "tools/call" and message["params"]["arguments"].get("mode") == "exit":
                os._exit(3)
            if request_id is not None:
                EVENTS.put(self.legacy_answer(message))
            return self.send(202, b"", "text/plain")
        if request_id is None:
            return self.send(202, b"", "application/json")
        if method == "initialize":
            result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "wire-http", "version": "0"}}  # fmt: skip
        elif method == "tools/list":
            result = {"tools": [TOOL]}
        elif method == "tools/call":
            mode = message["params"]["arguments"].get("mode")
            if mode == "exit":
                os._exit(3)  # the server dies mid-call: the connection drops without an answer
            if mode == "sse":
                return self.send(
                    200, b"event: message\ndata: " + answer(request_id, BROKEN) + b"\n\n", "text/event-stream"
                )
            return self.send(200, answer(request_id, BROKEN if mode == "json" else b'"fine"'), "application/json")
        else:
            result = {}
        self.send(200, json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode(), "application/json")

    def legacy_answer(self, message: dict) -> bytes:
        request_id, method = message["id"], message["method"]
        if method == "tools/call":
            return answer(request_id, BROKEN)
        result = {"tools": [TOOL]} if method == "tools/list" else {}
        if method == "initialize":
            result = {
                "protocolVersion": "2024-11-05",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "wire-sse", "version": "0"},
            }
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()

    def do_GET(self) -> None:
        if self.path != "/sse":
            return self.send(405, b"", "text/plain")  # no server-initiated stream on streamable HTTP
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(b"event: endpoint\ndata: /messages?session_id=1\n\n")
        self.wfile.flush()
        while True:
            self.wfile.write(b"event: message\ndata: " + EVENTS.get() + b"\n\n")
            self.wfile.flush()

    def do_DELETE(self) -> None:
        self.send(200, b"", "text/plain")

    def send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
