"""The hand-off summary request: instructions, then the older messages as a plain transcript.

The transcript is text, not chat messages: the side call then carries no tool calls or tool
results, so it is valid on the strictest servers whatever the history holds. Tool output is
clipped (head and tail, where errors usually are), injected skill bodies are left out because
crow re-injects skills after compaction, and when the whole transcript would not fit the side
call's budget the oldest messages go first (an earlier summary is always kept).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from crow_acp.core.session import SUMMARY_PREFIX

from .cut import Entry

MARKER = "CONTEXT CHECKPOINT"
SYSTEM = (
    "You write hand-off summaries of an AI agent's working session, so that another model can take over "
    "the work with nothing but your summary and the most recent messages. Answer with the summary text "
    "only: no preamble, and no tool calls."
)
INSTRUCTIONS = f"""{MARKER}. The messages below are about to be removed from the agent's context. Write a \
hand-off summary that lets the next model continue the work without them. Use these headings:

## Goal
What the user wants, in their own words where the wording matters.
## Decisions
What was decided, and why.
## Progress
What was done, including the key tool results: what was found, what failed, and how it was fixed.
## Constraints and preferences
Rules and preferences the user stated (style, tools, things to avoid), kept verbatim.
## Next steps
What remains to do, and what was in progress when the summary was written.
## Exact references
File paths, identifiers, names, commands, URLs and numbers that the work depends on, copied exactly.

Be concise, but never drop an instruction the user gave. Do not state that any tool is available: the \
next model gets its own list. The system prompt, AGENTS.md and loaded skills are restored after this \
summary, so do not repeat them."""

TOOL_RESULT_CHARS = 2_000
ARGUMENT_CHARS = 1_000
MESSAGE_CHARS = 12_000
SKILL = re.compile(r"<skill_content\s+name=\"([^\"]*)\"[^>]*>.*?</skill_content>", re.DOTALL)


def summary_request(older: Sequence[Entry], *, focus: str = "", max_chars: int) -> str:
    """The user message of the side call: instructions, optional focus, then the transcript."""
    parts = [INSTRUCTIONS]
    if focus.strip():
        parts.append(f"The user asked this summary to focus on: {focus.strip()}")
    parts.append(f"<transcript>\n{transcript(older, max_chars)}\n</transcript>")
    parts.append("Write the hand-off summary now.")
    return "\n\n".join(parts)


def transcript(older: Sequence[Entry], max_chars: int) -> str:
    names: dict[Any, str] = {}
    blocks = [_block(entry, names) for entry in older]
    return "\n\n".join(_fit(blocks, older, max_chars))


def _fit(blocks: list[str], older: Sequence[Entry], max_chars: int) -> list[str]:
    """Earlier summaries, then the newest other blocks that fit in max_chars, in order."""
    summaries = [block for block, entry in zip(blocks, older, strict=True) if entry.meta.kind == "summary"]
    rest = [block for block, entry in zip(blocks, older, strict=True) if entry.meta.kind != "summary"]
    room, kept = max_chars - sum(map(len, summaries)), []
    for block in reversed(rest):
        if len(block) > room:
            break
        kept.append(block)
        room -= len(block)
    dropped = len(rest) - len(kept)
    note = [f"[{dropped} older messages left out: they did not fit in one summary request]"] if dropped else []
    return [*summaries, *note, *reversed(kept)]


def _block(entry: Entry, names: dict[Any, str]) -> str:
    message = entry.message
    role = message.get("role")
    text = _text(message.get("content"))
    if entry.meta.kind == "summary":
        return f"[Summary of the conversation before this point]\n{text.removeprefix(SUMMARY_PREFIX)}"
    text = SKILL.sub(lambda m: f"[skill {m.group(1)!r} was loaded here; it is restored after compaction]", text)
    if role == "tool":
        name = names.get(message.get("tool_call_id"), "tool")
        return f"[Tool result: {name}, call {message.get('tool_call_id')}]\n{clip(text, TOOL_RESULT_CHARS)}"
    if role == "assistant":
        lines = [f"[Assistant]\n{clip(text, MESSAGE_CHARS)}"] if text else []
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            names[call.get("id")] = function.get("name") or "tool"
            arguments = clip(function.get("arguments") or "{}", ARGUMENT_CHARS)
            lines.append(f"[Assistant called {function.get('name')}, call {call.get('id')}] {arguments}")
        return "\n".join(lines) or "[Assistant]\n(no text)"
    label = "User" if role == "user" else (role or "message").capitalize()
    return f"[{label}]\n{clip(text, MESSAGE_CHARS)}"


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(
            part.get("text", "") if part.get("type") == "text" else f"[{part.get('type')}]"
            for part in content
            if isinstance(part, dict)
        )
    if content is None or isinstance(content, str):
        return content or ""
    return json.dumps(content)


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[… {len(text) - 2 * half} characters left out …]\n{text[-half:]}"
