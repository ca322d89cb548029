"""The chat's input history: one JSON string a line in $CROW_HOME/chat_history, private to the user (a line
may hold a secret that was pasted; crow's model keys are redacted from it, as from the store and the logs),
and bounded: past twice the limit, the file is cut to the newest lines."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path

from prompt_toolkit.history import History

from crow_acp.util.secrets import redact

log = logging.getLogger("crow.chat")
LIMIT = 1000
"""Entries kept; the file holds at most twice as many before it is cut back."""


class BoundedHistory(History):
    def __init__(self, path: Path, limit: int = LIMIT) -> None:
        super().__init__()
        self.path = path
        self.limit = limit

    def _entries(self) -> list[str]:
        try:
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            return []
        except OSError as exc:
            log.warning("chat history not read: %s", exc)
            return []
        return [entry for entry in map(_entry, lines) if entry is not None]

    def load_history_strings(self) -> Iterable[str]:
        return list(reversed(self._entries()[-self.limit :]))  # prompt_toolkit wants the newest first

    def store_string(self, string: str) -> None:
        try:
            from crow_acp.config.private import private_dir

            private_dir(self.path.parent)  # $CROW_HOME: 0700, as crow makes it everywhere
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as out:
                out.write(json.dumps(redact(string)) + "\n")  # a pasted model key is not kept, as nowhere else
            entries = self._entries()
            if len(entries) > 2 * self.limit:
                self._rewrite(entries[-self.limit :])
        except OSError as exc:  # the history is a convenience: a full disk must not end the conversation
            log.warning("chat history not saved: %s", exc)

    def _rewrite(self, entries: list[str]) -> None:
        temporary = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.writelines(json.dumps(entry) + "\n" for entry in entries)
        os.replace(temporary, self.path)


def _entry(line: str) -> str | None:
    """One stored line; a damaged one is skipped, not fatal."""
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, str) else None
