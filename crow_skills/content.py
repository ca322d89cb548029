"""Skill bodies as the model sees them: wrapped in <skill_content>, so compaction can recognise them.

A wrapped body is always the whole content of its message (an injected user message or a
load_skill result), so `skill_in(content)` only looks at the start: a summary that quotes a
skill does not count as the skill being present.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

from .skill import Skill

TAG = "skill_content"
RESOURCE_DIRS = ("scripts", "references", "assets")
MAX_RESOURCES = 50
CHARS_PER_TOKEN = 4  # a budget estimate; the provider's counts are the real ones
_OPENING = re.compile(rf'\s*<{TAG} name="([a-z0-9-]+)"')


def wrap(skill: Skill, note: str = "", *, max_tokens: int | None = None) -> str:
    """The skill's body with its folder and resources; cut at `max_tokens` with a visible marker."""
    body = skill.body.strip()
    if max_tokens is not None and len(body) > max_tokens * CHARS_PER_TOKEN:
        keep = max_tokens * CHARS_PER_TOKEN
        body = f"{body[:keep]}\n[... truncated: {len(body) - keep} more characters; read {skill.path} for the rest]"
    lines = [f'<{TAG} name="{skill.name}">', *([note] if note else []), body, ""]
    lines += [f"Skill directory: {skill.directory}", "Relative paths in this skill are relative to that directory."]
    if resources := _resources(skill.directory):
        lines += ["<skill_resources>", *(f"<file>{path}</file>" for path in resources), "</skill_resources>"]
    lines.append(f"</{TAG}>")
    return "\n".join(lines)


def skill_in(content: Any) -> str | None:
    """The name of the skill this message content is, or None."""
    match = _OPENING.match(content) if isinstance(content, str) else None
    return match.group(1) if match else None


def present(messages: list[dict[str, Any]]) -> set[str]:
    return {name for message in messages if (name := skill_in(message.get("content")))}


def tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN + 1


def _resources(directory: Path) -> list[str]:
    found: list[str] = []
    for sub in RESOURCE_DIRS:
        root = directory / sub
        if root.is_dir():
            files = itertools.islice((p for p in root.rglob("*") if p.is_file()), MAX_RESOURCES)  # assets can be huge
            found += sorted(str(p.relative_to(directory)) for p in files)
    return found[:MAX_RESOURCES]
