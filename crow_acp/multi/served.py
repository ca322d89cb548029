"""Who a MultiAgent serves (acp/served.py): every member serves the caller. A graph is checked by its entry
session (ownership.py); its members' sessions are opened and run acting for the entry's owner, whose they are.
session/list shows the entry's sessions the caller may see."""

from __future__ import annotations

from typing import Any

from ..acp.agent import AcpAgent
from ..store import Caller


class ServedGraph:
    entry: AcpAgent
    members: list[AcpAgent]

    def act_for(self, caller: Caller) -> None:
        for member in self.members:
            member.act_for(caller)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """`_crow/share` of the entry's session shares the graph."""
        return await self.entry.ext_method(method, params)

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **_: Any) -> Any:
        """The entry agent's sessions the caller may see: one per editor session (members' are not listed)."""
        return await self.entry.list_sessions(cwd=cwd, cursor=cursor)
