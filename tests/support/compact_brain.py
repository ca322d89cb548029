"""For the compaction tests: a model answering each turn with the prompt tokens it asks for ("[p=700]"),
and summary requests with a summary."""

from __future__ import annotations

import re
from typing import Any

from crow_acp.testing import Fault, Reply, ToolCall
from crow_compact.summary import MARKER
from support.helpers import RecordingClient, text

FILLER = "apples and pears " * 25  # ~100 tokens, so the older turns are worth summarising


class Brain:
    """Answers turns with the prompt tokens they ask for, and summary requests with a summary."""

    def __init__(self) -> None:
        self.fail_summary = False
        self.summaries: list[dict] = []
        self.turns: list[dict] = []
        self.call_tool_once = False
        self.summary_delay = 0.0

    def __call__(self, request: dict) -> Reply | Fault:
        messages = request["messages"]
        last = messages[-1].get("content") or ""
        if not request.get("stream") and MARKER in last:
            self.summaries.append(request)
            if self.fail_summary:
                return Fault(400, "the summary request was refused")
            return Reply(text=f"SUMMARY-{len(self.summaries)}: the user lists fruit.", first_delay=self.summary_delay)
        self.turns.append(request)
        prompt = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        tokens = int(match.group(1)) if (match := re.search(r"\[p=(\d+)\]", prompt)) else 100
        usage = {"prompt_tokens": tokens, "completion_tokens": 3, "total_tokens": tokens + 3}
        if self.call_tool_once and messages[-1]["role"] != "tool":
            return Reply(tool_calls=[ToolCall("no_such_tool", {})], usage=usage)  # one more step, same turn
        word = re.match(r"turn (\w+)", prompt)
        return Reply(text=f"ack {word.group(1) if word else '?'}", usage=usage)


def turn(name: str, tokens: int, *, filler: bool = False) -> list[Any]:
    return [text(f"turn {name} [p={tokens}]" + (f" {FILLER}" if filler else ""))]


def activity(client: RecordingClient, title: str) -> list[Any]:
    """Every update of the activities titled `title`: the tool_call that starts one, then its updates."""
    ids = {u.tool_call_id for u in client.updates if u.session_update == "tool_call" and u.title == title}
    kinds = ("tool_call", "tool_call_update")
    return [u for u in client.updates if u.session_update in kinds and getattr(u, "tool_call_id", None) in ids]
