"""The extension requests AcpAgent serves (methods that begin with "_"; the SDK hands them to
`ext_method` with the "_" taken off). A base of AcpAgent, beside driven.py and run.py.

    _session/steering   a message for the running turn (prompt/steering.py)
    _crow/rewind        the conversation and the files back to before a user message (sessions/rewind.py)
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from functools import cached_property
from typing import TYPE_CHECKING, Any

from acp import RequestError

from .prompt.steering import Steering

if TYPE_CHECKING:
    from .sessions.opener import SessionOpener


class ServesExtensions:
    """What it uses of AcpAgent: the opener, the prompt handler (a new turn) and its background tasks."""

    opener: SessionOpener
    prompt: Callable[[list[Any], str], Coroutine[Any, Any, Any]]
    _spawn: Callable[[Coroutine[Any, Any, Any]], None]

    @cached_property
    def steering(self) -> Steering:
        return Steering(self.opener.live, self.prompt, self._spawn)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "session/steering":
            return await self.steering.steer(params)
        if method == "crow/rewind":
            return await self.opener.rewinds.request(params)
        raise RequestError.method_not_found(f"_{method}")
