"""The extension requests AcpAgent serves (methods that begin with "_"; the SDK hands them to
`ext_method` with the "_" taken off). A base of AcpAgent, beside driven.py and run.py.

    _session/steering   a message for the running turn (prompt/steering.py)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp import RequestError

if TYPE_CHECKING:
    from .prompt.steering import Steering


class ServesExtensions:
    steering: Steering

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "session/steering":
            return await self.steering.steer(params)
        raise RequestError.method_not_found(f"_{method}")
