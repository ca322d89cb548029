"""A stdio MCP server that will not die: it ignores SIGTERM, keeps running after its stdin closes,
and starts a grandchild that does the same. It writes "SERVER_PID GRANDCHILD_PID" to the file
named by its first argument once it answers `initialize`. Standard library only (starts fast).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

STUBBORN = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(3600)"


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    grandchild = subprocess.Popen([sys.executable, "-c", STUBBORN], stdin=subprocess.DEVNULL)
    for raw in sys.stdin:
        message = json.loads(raw)
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "stubborn", "version": "0"}}})  # fmt: skip
            with open(sys.argv[1] + ".tmp", "w") as handle:
                handle.write(f"{os.getpid()} {grandchild.pid}")
            os.replace(sys.argv[1] + ".tmp", sys.argv[1])
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": []}})
        elif request_id is not None:
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
    while True:  # stdin closed: a well-behaved server would exit here
        time.sleep(3600)


if __name__ == "__main__":
    main()
