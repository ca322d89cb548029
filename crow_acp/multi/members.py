"""The members' sessions of one editor session: resumed or forked from the store, made for a member added since."""

from __future__ import annotations

from typing import Any

from ..acp.agent import AcpAgent
from .graph import Stored, member_sessions


async def open_members(
    members: list[AcpAgent],
    session_id: str,
    stored: Stored,
    cwd: str,
    mcp_servers: list[Any] | None,
    directories: list[str] | None,
) -> dict[str, str]:
    """{member name: session id}: `stored` for each member's stored session, a new one for a member without."""

    async def new(member: AcpAgent) -> str:
        answer = await member.new_session(cwd=cwd, mcp_servers=mcp_servers, additional_directories=directories)
        return str(answer.session_id)

    return await member_sessions(members, session_id, stored, new)


async def resume_members(
    members: list[AcpAgent], cwd: str, session_id: str, mcp_servers: list[Any] | None
) -> dict[str, str]:
    """Resume every member's stored session of this graph (without replay); create missing ones."""

    async def resume(member: AcpAgent, sid: str) -> str:
        await member.resume_session(cwd=cwd, session_id=sid, mcp_servers=mcp_servers)
        return sid

    return await open_members(members, session_id, resume, cwd, mcp_servers, None)
