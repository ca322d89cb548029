"""What every stored history and every model request must satisfy, whatever happened before.

Read straight from `sessions.db` (not through crow), so a test sees exactly what a restart loads.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from support.helpers import assert_strict_pairing


def assert_valid_unicode(value: Any, where: str = "") -> None:
    """Every string in a JSON-like value (keys too) encodes as UTF-8: no lone surrogates."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise AssertionError(f"{where}: invalid Unicode {node!r:.80}") from exc
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def stored_rows(home: Path, session_id: str) -> list[tuple[dict[str, Any], dict[str, Any], bool]]:
    """(message, extra, active) per stored row of a session, in order."""
    with sqlite3.connect(home / "sessions.db") as db:
        rows = db.execute(
            "SELECT message, extra, active FROM messages WHERE session_id = ? ORDER BY pos", (session_id,)
        ).fetchall()
    return [(json.loads(m), json.loads(e), bool(a)) for m, e, a in rows]


def session_ids(home: Path) -> list[str]:
    with sqlite3.connect(home / "sessions.db") as db:
        return [row[0] for row in db.execute("SELECT id FROM sessions")]


def assert_history_valid(home: Path, session_id: str, *, in_flight_ok: bool = False) -> list[dict[str, Any]]:
    """The active history is what the strictest provider accepts; returns its messages."""
    rows = stored_rows(home, session_id)
    for message, extra, _ in rows:
        assert_valid_unicode(message, f"{session_id} message")
        assert_valid_unicode(extra, f"{session_id} extra")
    messages = [message for message, _, active in rows if active]
    assert_strict_pairing(messages, in_flight_ok=in_flight_ok)
    ids = [call["id"] for m in messages for call in m.get("tool_calls") or ()]
    assert len(ids) == len(set(ids)), f"call ids repeat in {session_id}: {ids}"
    for m in messages:
        for call in m.get("tool_calls") or ():
            assert isinstance(json.loads(call["function"]["arguments"]), dict), call
    results = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert len(results) == len(set(results)), f"a call answered twice in {session_id}"
    return messages


def assert_requests_valid(requests: list[dict[str, Any]]) -> None:
    """What the model received: valid Unicode JSON, strictly paired, unique call ids."""
    for index, request in enumerate(requests):
        assert_valid_unicode(request, f"model request {index}")
        assert_strict_pairing(request["messages"])
        ids = [call["id"] for m in request["messages"] for call in m.get("tool_calls") or ()]
        assert len(ids) == len(set(ids)), f"model request {index} repeats call ids {ids}"
