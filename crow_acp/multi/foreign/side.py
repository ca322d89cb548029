"""MemberSide: what one link's client requests (permission, fs/*, terminal/*) are served with."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MemberSide:
    """What the requests of one link's member are served with: the member's name, its agent's EditorLink (the
    editor's connection and capabilities), the member's session ids → crow sessions, and crow's open sessions."""

    name: str
    editor: Any
    sessions: dict[str, str]
    session: Callable[[str], Any]
