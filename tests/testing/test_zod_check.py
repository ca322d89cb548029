"""The zod validator itself: it must catch what the newer-protocol tests rely on it to catch."""

from __future__ import annotations

from support.zod_check import problems, wire_messages


def notification(update: dict) -> tuple[str, dict]:
    return ("zSessionNotification", {"sessionId": "s1", "update": update})


def test_valid_new_shapes_pass() -> None:
    notice = {"sessionUpdate": "notice", "severity": "info", "title": "MCP server restarted"}
    assert problems([notification(notice)]) == []


def test_unknown_keys_bad_values_and_unknown_schemas_are_problems() -> None:
    found = problems(
        [
            notification({"sessionUpdate": "notice", "severity": "info", "title": "t", "text": "misnamed"}),
            notification({"sessionUpdate": "notice", "severity": "info", "title": ""}),
            notification({"sessionUpdate": "no_such_update"}),
            ("zNoSuchSchema", {}),
        ]
    )
    assert len(found) == 4
    assert "text: not in the schema" in found[0]
    assert "no schema named zNoSuchSchema" in found[3]


def test_wire_messages_pick_agent_methods_only() -> None:
    received = [
        {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {}}},
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "elicitation/create", "params": {}},
    ]
    assert [schema for schema, _ in wire_messages(received)] == ["zSessionNotification", "zCreateElicitationRequest"]
