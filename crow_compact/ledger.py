"""Per-message token counts kept in step with a session's history, at O(new messages) per check.

The context size is the provider's figure where there is one: at the last reply, `offset` records
how far the provider's prompt_tokens were from our estimate of the messages it was sent (tool
schemas, chat template, a different tokenizer). Afterwards the size is our running estimate plus
that offset, which is exactly "provider prompt tokens + an estimate of what was added since", and
it stays right after compaction rewrites the history.

The history only changes in three ways the core allows: messages are appended, the system message
is replaced or inserted at the front, and compaction rebuilds the list (and bumps the context
counter "compactions"). Anything other than an append or a replaced head forces a recount, which
reuses the counts of message objects it has seen, so only new text is ever tokenized.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .cut import Entry, is_prompt
from .tokens import Encoder, count_message, message_text

THREAD_CHARS = 50_000
"""Above this much new text, counting runs in a worker thread so other sessions keep streaming."""


class TokenLedger:
    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder
        self.messages: list[dict[str, Any]] = []
        """The message objects counted, in history order; holding them keeps their id() unique."""
        self.counts: list[int] = []
        self.total = 0
        self.offset = 0
        self.compactions = 0
        self.tokenized = 0
        """Messages tokenized so far: the test and the benchmark read it to prove O(new) cost."""
        self.last_prompt: dict[str, Any] | None = None
        self.last_user: dict[str, Any] | None = None
        self.calibration: tuple[int, int] | None = None
        """The provider's last (prompt_tokens, messages sent), to re-derive the offset for a new encoder."""

    @property
    def size(self) -> int:
        """Tokens the next model call would be sent (the provider's count where it gave one)."""
        return max(0, self.total + self.offset)

    @property
    def turn(self) -> dict[str, Any] | None:
        """The message that began the latest turn; identity stays stable across compaction."""
        return self.last_prompt or self.last_user

    def in_step(self, entries: Sequence[Entry], compactions: int) -> bool:
        """Whether the history only grew (or had its head replaced) since the last sync."""
        n = len(self.messages)
        if compactions != self.compactions or len(entries) < n:
            return False
        return n == 0 or entries[n - 1].message is self.messages[-1]

    def pending_chars(self, entries: Sequence[Entry], compactions: int) -> int:
        """Roughly how much text sync() would tokenize (a recount counts as a lot)."""
        if not self.in_step(entries, compactions):
            return THREAD_CHARS
        return sum(len(message_text(entry.message)[0]) for entry in entries[len(self.messages) :])

    def sync(self, entries: Sequence[Entry], compactions: int) -> int:
        if not self.in_step(entries, compactions):
            self._recount(entries, compactions)
            return self.size
        if self.messages and entries[0].message is not self.messages[0]:
            self._replace_head(entries[0].message)  # set_system_prompt swapped it in place
        for entry in entries[len(self.messages) :]:
            self._append(entry, None)
        return self.size

    def calibrate(self, prompt_tokens: int, sent: int) -> None:
        """The provider counted `prompt_tokens` for the first `sent` messages of the history."""
        self.calibration = (prompt_tokens, sent)
        self.offset = prompt_tokens - (self.total - sum(self.counts[sent:]))  # O(messages after the call)

    def recounted(self, encoder: Encoder, entries: Sequence[Entry], compactions: int) -> TokenLedger:
        """The same history counted with another encoder, calibrated against the same provider figure."""
        ledger = TokenLedger(encoder)
        ledger.tokenized = self.tokenized
        ledger.sync(entries, compactions)
        if self.calibration:
            ledger.calibrate(*self.calibration)
        else:
            ledger.offset = self.offset
        return ledger

    def tail(self, start: int) -> int:
        return sum(self.counts[start:])

    def _append(self, entry: Entry, known: int | None) -> None:
        if known is None:
            known = count_message(self.encoder, entry.message)
            self.tokenized += 1
        self.messages.append(entry.message)
        self.counts.append(known)
        self.total += known
        if entry.message.get("role") == "user":
            self.last_user = entry.message
            if is_prompt(entry):
                self.last_prompt = entry.message

    def _replace_head(self, message: dict[str, Any]) -> None:
        count = count_message(self.encoder, message)
        self.tokenized += 1
        self.total += count - self.counts[0]
        self.messages[0], self.counts[0] = message, count

    def _recount(self, entries: Sequence[Entry], compactions: int) -> None:
        known = {id(message): count for message, count in zip(self.messages, self.counts, strict=True)}
        self.messages, self.counts, self.total = [], [], 0
        self.last_prompt = self.last_user = None
        self.compactions = compactions
        for entry in entries:
            self._append(entry, known.get(id(entry.message)))
