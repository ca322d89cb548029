"""The intent of a rewind, on disk before the rewind touches anything: what it will do, and how far it got.

A kill mid-rewind leaves the journal; the next time the session opens, crow finishes the rewind from it
(every step can be done twice) and says so, so the workspace and the history are after, never half.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .objects import write_atomically
from .restore import Change

NAME = "rewind-journal.json"


@dataclass
class Intent:
    message: int
    """The user message rewound to (numbered from 1)."""
    row: int
    """Its row: the history keeps the rows before it."""
    fork: str | None
    """The session id the truncated tail is copied to (None: the conversation is not rewound)."""
    changes: list[Change] = field(default_factory=list)
    chat_done: bool = False

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["changes"] = [change.to_json() for change in self.changes]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Intent:
        changes = [Change.from_json(row) for row in data.get("changes", [])]
        return cls(int(data["message"]), int(data["row"]), data.get("fork"), changes, bool(data.get("chat_done")))


def write(directory: Path, intent: Intent) -> None:
    write_atomically(directory / NAME, json.dumps(intent.to_json()).encode(), durable=True)


def read(directory: Path) -> Intent | None:
    try:
        return Intent.from_json(json.loads((directory / NAME).read_bytes()))
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError):  # a journal cut short before its rename cannot exist; a damaged one
        return None


def clear(directory: Path) -> None:
    (directory / NAME).unlink(missing_ok=True)
