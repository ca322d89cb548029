"""The baseline: a bare acp-SDK agent that answers a prompt with N text chunks and no model."""

import asyncio
import sys

from acp import PROTOCOL_VERSION, run_agent, text_block
from acp.schema import AgentMessageChunk, InitializeResponse, NewSessionResponse, PromptResponse

CHUNKS = int(sys.argv[1]) if len(sys.argv) > 1 else 1


class EchoAgent:
    def on_connect(self, conn):
        self.conn = conn

    async def initialize(self, protocol_version, **_):
        return InitializeResponse(protocol_version=PROTOCOL_VERSION)

    async def new_session(self, cwd, **_):
        return NewSessionResponse(session_id="echo")

    async def prompt(self, prompt, session_id, **_):
        for _ in range(CHUNKS):
            update = AgentMessageChunk(session_update="agent_message_chunk", content=text_block("tok "))
            await self.conn.session_update(session_id=session_id, update=update)
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(run_agent(EchoAgent()))
