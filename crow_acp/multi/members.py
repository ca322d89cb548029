"""The members' sessions of one editor session: resumed or forked from the store, made for a member added since,
deleted with it.

A client's system prompt (`systemPrompt`, ACP 1.30) goes to every member, checked once before any member
opens a session (acp/sessions/system_prompt.py)."""

from __future__ import annotations

import asyncio
from typing import Any

from ..acp.agent import AcpAgent
from ..acp.sessions.system_prompt import client_prompt
from ..store import Grant
from .graph import Stored, member_sessions, stored_members


async def new_members(
    members: list[AcpAgent], cwd: str, mcp_servers: list[Any] | None, directories: list[str] | None, system_prompt: Any
) -> dict[str, str]:
    """{member name: session id} of a new session on every member, each with the client's system prompt."""
    client_prompt(system_prompt)  # a bad one is refused before any member opens a session
    answers = await asyncio.gather(
        *(m.new_session(cwd, mcp_servers, directories, system_prompt=system_prompt) for m in members)
    )
    return {m.name: str(answer.session_id) for m, answer in zip(members, answers, strict=True)}


async def open_members(
    members: list[AcpAgent],
    session_id: str,
    stored: Stored,
    cwd: str,
    mcp_servers: list[Any] | None,
    directories: list[str] | None,
    system_prompt: Any = None,
) -> dict[str, str]:
    """{member name: session id}: `stored` for each member's stored session, a new one for a member without."""
    client_prompt(system_prompt)  # a bad one is refused before any member opens a session

    async def new(member: AcpAgent) -> str:
        answer = await member.new_session(cwd, mcp_servers, directories, system_prompt=system_prompt)
        return str(answer.session_id)

    return await member_sessions(members, session_id, stored, new)


async def resume_members(
    members: list[AcpAgent], cwd: str, session_id: str, mcp_servers: list[Any] | None, system_prompt: Any = None
) -> dict[str, str]:
    """Resume every member's stored session of this graph (without replay); create missing ones."""

    async def resume(member: AcpAgent, sid: str) -> str:
        await member.resume_session(cwd, sid, mcp_servers, system_prompt=system_prompt)
        return sid

    return await open_members(members, session_id, resume, cwd, mcp_servers, None, system_prompt)


async def delete_members(members: list[AcpAgent], session_id: str, grant: Grant) -> None:
    """The entry's session deleted (refused, with nothing deleted, if another process has it open), then each
    member's session that the entry's record named, acting for its owner (whose they are)."""
    entry = members[0]
    known = await stored_members(entry, session_id)
    await entry.delete_session(session_id=session_id)
    with entry.ownership.acting_for_owner(grant):
        for member in members[1:]:
            if (sid := known.get(member.name)) is not None:
                await member.delete_session(session_id=sid)
