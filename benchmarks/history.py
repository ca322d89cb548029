"""A long stored session for the load benchmarks: user, tool call, tool result, answer, repeated."""

from __future__ import annotations

import os
import time

from crow_acp.history import EntryMeta, StoredMessage, ToolDisplay
from crow_acp.store import SessionRecord, SessionStore


def fill_session(store: SessionStore, session_id: str, messages: int) -> None:
    store.create(SessionRecord(session_id, os.getcwd(), "bench", time.time(), time.time(), {"agent": "crow"}))
    rows = 0

    def add(message: dict, meta: EntryMeta | None = None) -> None:
        nonlocal rows
        rows += 1
        store.append(session_id, StoredMessage(message, meta or EntryMeta(), row_id=rows))

    for index in range(messages // 4):
        call_id = f"call_{index}"
        add(
            {"role": "user", "content": f"question {index} " * 20},
            EntryMeta("prompt", blocks=[{"type": "text", "text": f"question {index}"}]),
        )
        add(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "time__get_current_time", "arguments": "{}"},
                    }
                ],
            }
        )
        add(
            {"role": "tool", "tool_call_id": call_id, "content": "result " * 30},
            EntryMeta(tool=ToolDisplay("time__get_current_time", "get_current_time", "read")),
        )
        add({"role": "assistant", "content": f"answer {index} " * 40}, EntryMeta(reasoning="thinking " * 10))
