"""A client's system prompt (ACP `systemPrompt`, schema 1.30) over crow's own.

The editor may give a session system-level instructions on session/new, load, resume and fork:
`append` adds them after crow's own system prompt, `override` replaces crow's own with them. They
are kept in the session's data (redacted), so a load without one keeps them and a load with one
replaces them. The stored system message stays crow's own (what the hooks set); every reader of the
messages (the model requests, the hooks, side prompts, compaction) gets the effective one, built
here when the messages are read, so a hook that rebuilds crow's prompt never drops the client's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

KEY = "client_system_prompt"
"""Where the session's data keeps it: {"mode": "append" | "override", "text": str}."""
SEPARATOR = "\n\n"

Mode = Literal["append", "override"]


@dataclass(frozen=True)
class ClientPrompt:
    mode: Mode
    text: str

    def to_json(self) -> dict[str, str]:
        return {"mode": self.mode, "text": self.text}

    @classmethod
    def stored(cls, value: Any) -> ClientPrompt | None:
        """The prompt a session's data keeps; None when there is none (or it is not one crow wrote)."""
        if isinstance(value, dict) and value.get("mode") in ("append", "override"):
            if isinstance(text := value.get("text"), str):
                return cls(value["mode"], text)
        return None


def with_client_prompt(messages: list[dict[str, Any]], data: dict[str, Any]) -> list[dict[str, Any]]:
    """`messages` with the effective system message first (unchanged when the client gave none)."""
    prompt = ClientPrompt.stored(data.get(KEY))
    if prompt is None:
        return messages
    has_own = bool(messages) and messages[0]["role"] == "system"
    rest = messages[1:] if has_own else messages
    own = messages[0].get("content") if has_own else None
    if prompt.mode == "override" or not isinstance(own, str) or not own.strip():
        text = prompt.text
    else:
        text = own + SEPARATOR + prompt.text
    return [{"role": "system", "content": text}, *rest]
