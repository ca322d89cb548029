"""Strict histories: what crow sends to a model satisfies the strictest provider, whatever is stored.

    - every assistant tool call is answered by exactly one tool result, right after its message;
    - no tool result lacks its call (one out of place or answering nothing is left out);
    - call ids are unique within the session;
    - arguments are a JSON object.

Three places hold this: a reply's calls are checked as they are recorded (`turn.check_new_calls`: an
invalid or repeated id is replaced, and the call is answered with an error), a stored history is
repaired on load (`repair_entries`), and every request is passed through `strict_messages` at the
end, so a cancel, a kill, a compaction or a callback's write cannot make a request invalid.
The raw text the model sent stays in the tool display for the editor.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..history import EntryMeta, StoredMessage, ToolDisplay

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # what OpenAI accepts as a function name
NO_RESULT = "No result was recorded for this tool call (crow stopped or the history was damaged)."


@dataclass
class _Fixed:
    """One message of the strict form: where it came from (None: made up here) and its content."""

    source: int | None
    message: dict[str, Any]
    changed: bool = False


@dataclass
class _Ids:
    seen: set[str] = field(default_factory=set)

    def claim(self, wanted: Any) -> str:
        """`wanted` when it is a fresh, non-empty string id, else a new unique one."""
        if isinstance(wanted, str) and wanted and wanted not in self.seen and len(wanted) <= 128:
            self.seen.add(wanted)
            return wanted
        fresh = f"call_{uuid.uuid4().hex[:16]}"
        self.seen.add(fresh)
        return fresh


def object_arguments(text: Any) -> str:
    """The arguments as a JSON object string: the text itself when it is one, else "{}"."""
    if isinstance(text, str):
        try:
            if isinstance(json.loads(text), dict):
                return text
        except (ValueError, RecursionError):  # RecursionError: nested deeper than Python recurses
            pass
    return "{}"


def _strict(messages: Sequence[dict[str, Any]]) -> list[_Fixed]:
    out: list[_Fixed] = []
    ids = _Ids()
    index = 0
    while index < len(messages):
        message = messages[index]
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool" or role is None:  # a result with no call right before it, or not a message
            index += 1
            continue
        calls = message.get("tool_calls") if role == "assistant" else None
        if not calls:
            if role == "assistant" and "tool_calls" in message:  # an empty list: strict servers refuse it
                out.append(_Fixed(index, _without_calls(message), changed=True))
            else:
                out.append(_Fixed(index, message))
            index += 1
            continue
        end = index + 1
        while end < len(messages) and isinstance(messages[end], dict) and messages[end].get("role") == "tool":
            end += 1
        out += _answered_block(index, message, calls, messages, end, ids)
        index = end
    return out


def _answered_block(
    index: int, message: dict[str, Any], calls: Any, messages: Sequence[dict[str, Any]], end: int, ids: _Ids
) -> list[_Fixed]:
    """An assistant message with calls, then exactly one result per call, in call order."""
    results: dict[str, list[int]] = {}
    for position in range(index + 1, end):
        results.setdefault(str(messages[position].get("tool_call_id")), []).append(position)
    fixed_calls, answers, changed = [], [], False
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            changed = True
            continue
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        new_id = ids.claim(call.get("id"))
        name = function.get("name")
        name = name if isinstance(name, str) and _NAME.fullmatch(name) else "invalid_tool_name"
        arguments = object_arguments(function.get("arguments"))
        fixed = {"id": new_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        changed |= fixed != call
        fixed_calls.append(fixed)
        queue = results.get(str(call.get("id")), [])
        if queue:  # the first result with the call's original id answers it
            position = queue.pop(0)
            result = messages[position]
            good = result.get("tool_call_id") == new_id and isinstance(result.get("content"), str)
            content = (
                result.get("content") if isinstance(result.get("content"), str) else json.dumps(result.get("content"))
            )
            answers.append(
                _Fixed(
                    position, result if good else {"role": "tool", "tool_call_id": new_id, "content": content}, not good
                )
            )
        else:
            answers.append(_Fixed(None, {"role": "tool", "tool_call_id": new_id, "content": NO_RESULT}, True))
    if not fixed_calls:
        return [_Fixed(index, _without_calls(message), changed=True)]
    head = {**message, "tool_calls": fixed_calls} if changed else message
    return [_Fixed(index, head, changed), *answers]


def _without_calls(message: dict[str, Any]) -> dict[str, Any]:
    clean = {key: value for key, value in message.items() if key != "tool_calls"}
    clean["content"] = clean.get("content") or ""
    return clean


def strict_messages(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages in the strict form; unchanged messages are shared, not copied."""
    return [fixed.message for fixed in _strict(messages)]


def repair_entries(entries: Sequence[StoredMessage]) -> list[StoredMessage]:
    """A stored history in the strict form (on load): results out of place are left out, missing
    ones made up, ids and arguments fixed. The rows stay as they are; the raw text stays in them."""
    fixed = _strict([entry.message for entry in entries])
    if len(fixed) == len(entries) and not any(f.changed for f in fixed):
        return list(entries)
    repaired = []
    for item in fixed:
        if item.source is None:
            name = "tool"
            repaired.append(StoredMessage(item.message, EntryMeta(tool=ToolDisplay(name, title=name, status="failed"))))
        elif item.changed:
            repaired.append(replace(entries[item.source], message=item.message))
        else:
            repaired.append(entries[item.source])
    return repaired
