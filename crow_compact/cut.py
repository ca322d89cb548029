"""Where compaction may cut the history: only where a user turn begins.

A turn begins at a user message the user (or a bridge) prompted: the core stores those with the
prompt's ACP `blocks`. User messages that callbacks inject (skills, reminders) are not turn starts,
so a cut never lands between a prompt and what was injected for it. A history with no such marks
at all (built by hand) treats every user message as a turn start.

A turn start is still refused if a tool result after it answers a call before it: strict servers
reject a result without its call, and a history that was already broken must not get worse.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate
from typing import Any, Protocol

from crow_acp.history import EntryMeta


class Entry(Protocol):
    message: dict[str, Any]
    meta: EntryMeta


def head_size(entries: Sequence[Entry]) -> int:
    """1 when the history starts with the system message (always kept), else 0."""
    return 1 if entries and entries[0].message.get("role") == "system" else 0


def is_prompt(entry: Entry) -> bool:
    return entry.message.get("role") == "user" and entry.meta.kind == "prompt"


def turn_starts(entries: Sequence[Entry]) -> list[int]:
    users = [i for i in range(head_size(entries), len(entries)) if entries[i].message.get("role") == "user"]
    return [i for i in users if is_prompt(entries[i])] or users


def safe_cuts(entries: Sequence[Entry]) -> list[int]:
    """Turn starts where a kept tail may begin without splitting a call from its result."""
    call_at: dict[Any, int] = {}
    crossings = [0] * (len(entries) + 1)
    for index, entry in enumerate(entries):
        message = entry.message
        for call in message.get("tool_calls") or ():
            call_at[call.get("id")] = index  # ids may repeat across turns: the nearest call wins
        if message.get("role") == "tool" and (called := call_at.get(message.get("tool_call_id"))) is not None:
            crossings[called + 1] += 1  # every cut in (called, index] would split this pair
            crossings[index + 1] -= 1
    open_pairs = list(accumulate(crossings))
    return [index for index in turn_starts(entries) if open_pairs[index] == 0]


def plan_cut(entries: Sequence[Entry], counts: Sequence[int], *, keep_last: int, budget: int) -> int | None:
    """The index where the kept tail begins, or None when nothing can usefully be compacted.

    The tail holds at least `keep_last` messages (rounded back to a turn start), then drops whole
    turns while it costs more than `budget` tokens, down to the latest turn. `keep_last=0` keeps
    only the latest turn.
    """
    cuts = safe_cuts(entries)
    if not cuts:
        return None
    limit = len(entries) - keep_last
    position = max((i for i, cut in enumerate(cuts) if cut <= limit), default=0)
    tail = sum(counts[cuts[position] :])
    while tail > budget and position + 1 < len(cuts):
        tail -= sum(counts[cuts[position] : cuts[position + 1]])
        position += 1
    cut = cuts[position]
    older = entries[head_size(entries) : cut]
    if all(entry.meta.kind == "summary" for entry in older):
        return None  # nothing, or only the previous summary: summarising it again gains nothing
    return cut
