"""The reply being streamed, kept in the store as it grows.

The editor shows a reply as it streams, but the reply is recorded when its stream ends. A crow
killed mid-stream would lose text the editor already showed, so once a reply has streamed for
DRAFT_EVERY seconds a draft of it is stored, and rewritten every DRAFT_EVERY seconds after: a
SIGKILL loses at most that much. A short reply is written once, when it ends, as before. A draft
holds text only (tool calls are recorded complete or not at all), so a history that ends in one
is valid for any provider.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..history import CutKind, EntryMeta, StoredMessage

if TYPE_CHECKING:
    from .session import Session

DRAFT_EVERY = 0.25
"""Seconds of streamed text a SIGKILL may lose; also how often a long reply's row is rewritten."""


class Draft:
    def __init__(self, session: Session, message_id: str) -> None:
        self.session = session
        self.message_id = message_id
        self.entry: StoredMessage | None = None
        self._due = time.monotonic() + DRAFT_EVERY

    def keep(self, text_parts: list[str], reasoning_parts: list[str]) -> None:
        """Store the reply so far if the last draft is DRAFT_EVERY old (cheap to call per chunk)."""
        if time.monotonic() < self._due:
            return
        self._due = time.monotonic() + DRAFT_EVERY
        text = {"role": "assistant", "content": "".join(text_parts)}
        self.settle(text, "".join(reasoning_parts) or None, cut="streaming")  # a load finds it marked as cut

    def settle(self, message: dict[str, Any], reasoning: str | None, cut: CutKind | None = None) -> None:
        """Store `message` as the reply: the draft's row rewritten, or a new row if there was none."""
        meta = EntryMeta(message_id=self.message_id, reasoning=reasoning, cut=cut)
        if self.entry is None:
            self.entry = self.session.record(message, meta)
        else:
            self.session.rewrite(self.entry, message, meta)
