"""Scripted replies from a JSON file, so crow can be tried and shown with no model account.

    [
      {"reasoning": "The user wants a file.", "text": "Writing it.",
       "tool_calls": [{"name": "write_file", "arguments": {"path": "hello.txt", "content": "hi\\n"}}]},
      {"text": "Done: hello.txt says hi."},
      {"error": {"status": 503, "message": "overloaded"}}
    ]

Each entry is one model response, in order; an entry with "error" is an HTTP error instead. Keys
are the fields of Reply, ToolCall and Fault; an unknown key is an error naming the entry.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .wire import Fault, Reply, ToolCall


class ScriptError(ConfigError, ValueError):
    """The script file is not valid; the message names the file and the entry."""


def load_script(path: Path) -> list[Reply | Fault]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ScriptError(f"{path}: {exc}") from exc
    if not isinstance(data, list) or not data:
        raise ScriptError(f"{path}: want a non-empty JSON list of replies")
    return [_entry(path, index, item) for index, item in enumerate(data, 1)]


def _entry(path: Path, index: int, item: Any) -> Reply | Fault:
    where = f"{path}: entry {index}"
    if not isinstance(item, dict):
        raise ScriptError(f'{where}: want an object such as {{"text": "..."}}')
    if "error" in item:
        if set(item) != {"error"} or not isinstance(item["error"], dict):
            raise ScriptError(f'{where}: an error entry is {{"error": {{"status": 500, "message": "..."}}}}')
        return _build(Fault, item["error"], where)
    calls = item.get("tool_calls", [])
    if not isinstance(calls, list):
        raise ScriptError(f"{where}: tool_calls must be a list")
    tool_calls = [_build(ToolCall, call, f"{where}, tool call {n}") for n, call in enumerate(calls, 1)]
    return _build(Reply, {**item, "tool_calls": tool_calls}, where)


def _build(cls: type, fields: Any, where: str) -> Any:
    if not isinstance(fields, dict):
        raise ScriptError(f"{where}: want an object")
    known = {f.name for f in dataclasses.fields(cls)} - {"reply"}
    if unknown := sorted(set(fields) - known):
        raise ScriptError(f"{where}: unknown key {unknown[0]!r}; known: {', '.join(sorted(known))}")
    try:
        return cls(**fields)
    except TypeError as exc:
        raise ScriptError(f"{where}: {exc}") from exc
