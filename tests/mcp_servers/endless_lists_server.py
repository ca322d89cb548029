"""A raw JSON-RPC MCP stdio server whose lists never end: every tools/list, prompts/list and
resources/list page carries one item and a next cursor. `ping` answers "pong".

    --lists FILE    append the method's name to FILE at every list request
"""

from __future__ import annotations

import argparse
import json
import sys


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def page(method: str, cursor: str | None) -> dict:
    n = int(cursor or 0)
    items = {
        "tools/list": ("tools", {"name": "ping" if n == 0 else f"tool_{n}", "inputSchema": {"type": "object"}}),
        "prompts/list": ("prompts", {"name": f"prompt_{n}", "description": "An endless list's prompt."}),
        "resources/list": ("resources", {"uri": f"file:///endless/{n}", "name": f"resource_{n}"}),
    }
    key, item = items[method]
    return {key: [item], "nextCursor": str(n + 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lists")
    options = parser.parse_args()
    for raw in sys.stdin:
        message = json.loads(raw)
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            capabilities = {"tools": {}, "prompts": {}, "resources": {}}
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": message["params"]["protocolVersion"], "capabilities": capabilities,
                "serverInfo": {"name": "endless", "version": "0"}}})  # fmt: skip
        elif method in ("tools/list", "prompts/list", "resources/list"):
            if options.lists:
                with open(options.lists, "a") as lists:
                    lists.write(method + "\n")
            send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "result": page(method, (message.get("params") or {}).get("cursor")),
                }
            )
        elif method == "tools/call":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": "pong"}]}})
        elif request_id is not None:
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})


if __name__ == "__main__":
    main()
