"""Who a MultiAgent serves (acp/served.py): every member serves the caller. A graph is checked by its entry
session (ownership.py); its members' sessions are opened and run acting for the entry's owner, whose they are.
session/list shows the entry's sessions the caller may see."""

from __future__ import annotations

from typing import Any

from acp import RequestError

from ..acp.agent import AcpAgent
from ..acp.prompt.steering import METHOD as STEERING
from ..store import Caller


class ServedGraph:
    entry: AcpAgent
    members: list[AcpAgent]

    def act_for(self, caller: Caller) -> None:
        for member in self.members:
            member.act_for(caller)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """`_crow/share` of the entry's session shares the graph, `_crow/rewind` refuses with the reason; a graph
        serves no `_session/steering` (its turn goes from member to member), so that is "method not found"."""
        if method == STEERING:
            raise RequestError.method_not_found(f"_{method}")
        return await self.entry.ext_method(method, params)

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **_: Any) -> Any:
        """The entry agent's sessions the caller may see: one per editor session (members' are not listed)."""
        return await self.entry.list_sessions(cwd=cwd, cursor=cursor)
