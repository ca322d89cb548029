"""Helpers of the rewind tests (tests/timeline/): a session driven over ACP whose turns the model scripts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crow_acp.testing import Reply, ScriptedModel, ToolCall
from support.helpers import RecordingClient, text
from support.hosted import hosted_crow
from support.sandbox_home import Home


def write(path: str, content: str, call_id: str) -> ToolCall:
    return ToolCall("write_file", {"path": path, "content": content}, id=call_id)


def edit(path: str, old: str, new: str, call_id: str) -> ToolCall:
    return ToolCall("edit_file", {"path": path, "old_string": old, "new_string": new}, id=call_id)


def turn(*calls: ToolCall, answer: str = "done") -> list[Reply]:
    """One turn's replies: each call in a reply of its own, then the answer."""
    return [*(Reply(tool_calls=[call]) for call in calls), Reply(text=answer)]


def users(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


def said(client: RecordingClient, since: int = 0) -> str:
    return "".join(u.content.text for u in client.updates[since:] if u.session_update == "agent_message_chunk")


@dataclass
class Live:
    conn: Any
    sid: str
    client: RecordingClient
    model: ScriptedModel
    home: Home

    async def say(self, words: str) -> str:
        """A prompt; what crow answered (for a slash command, its output)."""
        since = len(self.client.updates)
        response = await self.conn.prompt(session_id=self.sid, prompt=[text(words)])
        assert response.stop_reason == "end_turn"
        return said(self.client, since)


@asynccontextmanager
async def session(home: Home, script: list[Reply], *, mode: str = "auto", client: RecordingClient | None = None,
                  cwd: Path | None = None) -> AsyncIterator[Live]:  # fmt: skip
    """A new session in `home`'s project, in `mode`, whose model follows `script` then says "ok"."""
    client = client or RecordingClient()
    cwd = cwd or home.work
    async with ScriptedModel(script, default=Reply(text="ok")) as model:
        async with hosted_crow(client, home.env(model.base_url), cwd=str(cwd)) as (conn, _):
            sid = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
            await conn.set_session_mode(session_id=sid, mode_id=mode)
            yield Live(conn, sid, client, model, home)
