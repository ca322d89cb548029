"""Validates what crow sends against the ACP schema's zod definitions (@agentclientprotocol/sdk 2.4.0).

The Python SDK we can install knows schema v1.19; the SDK on npm carries the newer shapes (elicitation,
notices, compaction, plans, subagents, system prompts) as generated zod schemas. `problems()` runs
ts_client/validate.mjs once for a batch and returns every problem, named by the message it is in;
an empty list means every message is valid. Unknown keys count as problems (zod would drop them).

    problems(wire_messages(raw.received))           every notification and request crow sent
    problems([("zNewSessionResponse", result)])     one answer, by schema name
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from support.node_deps import ensure_node_modules

VALIDATOR = Path(__file__).parents[1] / "ts_client" / "validate.mjs"

# Schema of the params of each method crow (the agent) sends.
AGENT_METHODS = {
    "session/update": "zSessionNotification",
    "session/request_permission": "zRequestPermissionRequest",
    "elicitation/create": "zCreateElicitationRequest",
    "elicitation/complete": "zCompleteElicitationNotification",
    "fs/read_text_file": "zReadTextFileRequest",
    "fs/write_text_file": "zWriteTextFileRequest",
    "terminal/create": "zCreateTerminalRequest",
    "terminal/output": "zTerminalOutputRequest",
    "terminal/release": "zReleaseTerminalRequest",
    "terminal/wait_for_exit": "zWaitForTerminalExitRequest",
    "terminal/kill": "zKillTerminalRequest",
}


def wire_messages(received: Iterable[dict[str, Any]]) -> list[tuple[str, Any]]:
    """(schema, params) for every request and notification in `received` whose method has a schema."""
    return [(AGENT_METHODS[m["method"]], m.get("params")) for m in received if m.get("method") in AGENT_METHODS]


def problems(messages: list[tuple[str, Any]]) -> list[str]:
    if not messages:
        return []
    ensure_node_modules()
    lines = "".join(json.dumps({"schema": schema, "value": value}) + "\n" for schema, value in messages)
    out = subprocess.run(
        ["node", str(VALIDATOR)], input=lines, capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()
    assert len(out) == len(messages), out
    found = []
    for (schema, value), line in zip(messages, out, strict=True):
        verdict = json.loads(line)
        if not verdict["ok"]:
            found.append(f"{schema} {json.dumps(value)[:300]}: {'; '.join(verdict['problems'])}")
    return found
