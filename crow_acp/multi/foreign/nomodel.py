"""The model of a foreign member's crow session: none. Its turns are the foreign agent's (member.py),
so nothing asks crow's model; should anything try (a side prompt), it gets a clear error, and a
member needs no model key to start."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from ...config import ModelProfile
from ...errors import ModelError
from ...model.client import StreamDelta


class NoModel:
    def __init__(self, name: str) -> None:
        self.profile = ModelProfile(model=f"acp:{name}")
        self._name = name

    async def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, reasoning_effort: str | None = None
    ) -> AsyncIterator[StreamDelta]:
        raise ModelError(f"{self._name} is another ACP agent: crow has no model for it")
        yield  # an async generator, as the seam wants

    async def complete(self, messages: list[dict[str, Any]]) -> str:
        raise ModelError(f"{self._name} is another ACP agent: crow has no model for it")

    async def close(self) -> None:
        return None
