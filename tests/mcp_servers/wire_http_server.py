"""A raw streamable-HTTP MCP server (standard library only) whose answers carry lone surrogate
escapes, which no SDK server would send. One tool, `hostile(mode)`:

    json       the answer as an application/json body
    sse        the answer as one event of a text/event-stream body
    any other  a normal answer

    python wire_http_server.py PORT      (serves http://127.0.0.1:PORT/mcp)
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

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
        if request_id is None:
            return self.send(202, b"", "application/json")
        if method == "initialize":
            result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "wire-http", "version": "0"}}  # fmt: skip
        elif method == "tools/list":
            result = {"tools": [TOOL]}
        elif method == "tools/call":
            mode = message["params"]["arguments"].get("mode")
            if mode == "sse":
                return self.send(200, b"event: message\ndata: " + answer(request_id, BROKEN) + b"\n\n", "text/event-stream")
            return self.send(200, answer(request_id, BROKEN if mode == "json" else b'"fine"'), "application/json")
        else:
            result = {}
        self.send(200, json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode(), "application/json")

    def do_GET(self) -> None:
        self.send(405, b"", "text/plain")  # no server-initiated stream

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
