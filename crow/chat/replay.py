"""A resumed session's history, compactly: a line for each message (its first line) and each tool call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text

from crow.run.view import printable

SHOWN = 20
"""The last entries shown; earlier ones are counted."""
WIDTH = 100


@dataclass
class Entry:
    kind: str  # "user", "agent" or "tool"
    text: str
    ok: bool = True


def entries(updates: list[Any]) -> list[Entry]:
    """Chunks of one message joined; a tool call once, with its final status."""
    found: list[Entry] = []
    tools: dict[str, Entry] = {}
    for update in updates:
        kind = update.session_update
        if kind in ("user_message_chunk", "agent_message_chunk") and update.content.type == "text":
            who = "user" if kind == "user_message_chunk" else "agent"
            if found and found[-1].kind == who:
                found[-1].text += update.content.text
            else:
                found.append(Entry(who, update.content.text))
        elif kind in ("tool_call", "tool_call_update"):
            if update.tool_call_id not in tools:
                tools[update.tool_call_id] = Entry("tool", "")
                found.append(tools[update.tool_call_id])
            entry = tools[update.tool_call_id]
            entry.text = update.title or entry.text
            entry.ok = entry.ok if update.status is None else update.status != "failed"
    return found


def _first_line(text: str) -> str:
    lines = text.strip().splitlines() or [""]
    line = lines[0]
    more = len(line) > WIDTH or len(lines) > 1
    return printable(line[:WIDTH]) + (" …" if more else "")


def compact(updates: list[Any]) -> list[Text]:
    shown = entries(updates)
    lines: list[Text] = []
    if len(shown) > SHOWN:
        lines.append(Text(f"… {len(shown) - SHOWN} earlier", style="dim"))
    for entry in shown[-SHOWN:]:
        if entry.kind == "user":
            lines.append(Text.assemble(("> ", "bold"), _first_line(entry.text)))
        elif entry.kind == "agent":
            lines.append(Text("  " + _first_line(entry.text), style="dim"))
        else:
            mark = ("  ✓ ", "green") if entry.ok else ("  ✗ ", "red")
            lines.append(Text.assemble(mark, (_first_line(entry.text), "dim")))
    return lines
