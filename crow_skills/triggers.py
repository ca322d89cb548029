"""Deterministic triggers: a skill's phrases matched against the user's message as whole words.

"git" fires on "Git rebase" and "use git." but not on "github": a phrase must not have a
letter, digit or underscore right before or after it. Case is ignored, and the words of a
phrase may be separated by any whitespace.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from .skill import Skill

_ATTACHMENT = re.compile(r'<context uri="[^"]*">\n.*?\n</context>', re.S)


def matching(skills: Iterable[Skill], message: str) -> list[tuple[Skill, str]]:
    """Each skill one of whose triggers occurs in `message`, with the text that matched."""
    typed = _ATTACHMENT.sub(" ", message)  # files the editor attached are context, not the user's words
    hits = []
    for skill in skills:
        if skill.triggers and (match := pattern(skill.triggers).search(typed)):
            hits.append((skill, match.group(0)))
    return hits


@functools.lru_cache(maxsize=1024)
def pattern(phrases: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = sorted((r"\s+".join(map(re.escape, phrase.split())) for phrase in phrases), key=len, reverse=True)
    return re.compile(rf"(?<!\w)(?:{'|'.join(alternatives)})(?!\w)", re.IGNORECASE)
