"""What tests read back after a run: the tool results a model request carried, and the JSON-lines
log the test agents write (tests/agents/hook_agent.py and the multi-agent ones)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def results(request: dict[str, Any]) -> dict[str, str]:
    """Each tool call id in the request's messages, with the result the model was given for it."""
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


def read_log(path: Path) -> list[dict[str, Any]]:
    """The log's records in order; none when nothing was written yet."""
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
