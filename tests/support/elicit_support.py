"""For the elicitation tests: an MCP server that asks the editor questions (mcp_servers/elicit_server.py),
and a raw editor's side of them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from crow_acp.testing import ScriptedModel
from support import spawn
from support.helpers import TESTS
from support.raw_wire import RawCrow

SERVER = {
    "name": "elicit",
    "command": spawn.python(),
    "args": [str(TESTS / "mcp_servers" / "elicit_server.py")],
    "env": [],
}


FORM = {"elicitation": {"form": {}}}


URL = {"elicitation": {"url": {}}}


GOOD = {"seat": "aisle", "bags": 2, "name": "Ada", "meal": True}


def questions(crow: RawCrow) -> list[dict[str, Any]]:
    return [m for m in crow.received if m.get("method") == "elicitation/create"]


async def reply_to(crow: RawCrow, message: dict[str, Any], result: Any) -> None:
    await crow.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode() + b"\n")


async def next_question(crow: RawCrow, asked_before: int) -> dict[str, Any]:
    await crow.wait_for(lambda c: len(questions(c)) > asked_before)
    return questions(crow)[asked_before]


async def session(crow: RawCrow, cwd: Path) -> str:
    reply = await crow.call("session/new", {"cwd": str(cwd), "mcpServers": [SERVER]})
    return reply["result"]["sessionId"]


def prompt_params(sid: str) -> dict[str, Any]:
    return {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}


def tool_result(model: ScriptedModel, call_id: str) -> str:
    """What the model was told of the call (the tool message of the request after it)."""
    for request in model.requests:
        for message in request["messages"]:
            if message["role"] == "tool" and message["tool_call_id"] == call_id:
                return message["content"]
    raise AssertionError(f"no result for {call_id}")
