"""A streamed reply's text and thought chunks skip the SDK's models (acp_connection.py): what goes on
the wire must be exactly what the SDK would have sent, and an editor must read it as before."""

from __future__ import annotations

import pytest
from acp import text_block
from acp.schema import AgentMessageChunk, AgentThoughtChunk, SessionNotification
from acp.utils import serialize_params
from support.helpers import RecordingClient, crow_env, text
from support.hosted import hosted_crow

from crow_acp.acp.rpc.door import StreamedText, attach
from crow_acp.acp.rpc.wire import StdioTransport
from crow_acp.acp.updates.editor_link import EditorLink
from crow_acp.acp.updates.shapes import AcpUpdates
from crow_acp.events import TextDelta, ThoughtDelta
from crow_acp.testing import Reply, ScriptedModel

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("message_id", ["4f2a", None])
@pytest.mark.parametrize("piece", ["tok ", "", 'naïve \u2028 "quoted" \\ {json}', "😀" * 3])
def test_the_json_is_what_the_sdk_sends(message_id, piece):
    for kind, model in [("agent_message_chunk", AgentMessageChunk), ("agent_thought_chunk", AgentThoughtChunk)]:
        update = model(session_update=kind, content=text_block(piece), message_id=message_id)
        sdk = serialize_params(SessionNotification(session_id="s-1", update=update))
        assert StreamedText(kind, piece, message_id).params("s-1") == sdk  # type: ignore[arg-type]


class CapturedWire(StdioTransport):
    def __init__(self) -> None:
        super().__init__(None, None)  # type: ignore[arg-type]  # nothing is read or written
        self.sent: list[dict] = []

    async def send(self, message: dict) -> None:
        self.sent.append(message)


class SdkConnection:
    def __init__(self) -> None:
        self.updates: list[object] = []

    async def session_update(self, session_id: str, update: object, **_: object) -> None:
        self.updates.append(update)


async def test_only_a_connection_with_a_channel_skips_the_sdk():
    wired, other, wire = SdkConnection(), SdkConnection(), CapturedWire()
    attach(wired, wire)
    for conn in (wired, other):
        await AcpUpdates(EditorLink(conn))(TextDelta("s-1", "m-1", "tok"))
        await AcpUpdates(EditorLink(conn))(ThoughtDelta("s-1", "m-1", "hmm"))
    assert wired.updates == [] and [u.session_update for u in other.updates] == [
        "agent_message_chunk",
        "agent_thought_chunk",
    ]
    assert [m["method"] for m in wire.sent] == ["session/update"] * 2
    assert wire.sent[1]["params"] == StreamedText("agent_thought_chunk", "hmm", "m-1").params("s-1")


async def test_an_editor_reads_thoughts_and_text_of_one_message(crow_home, tmp_path):
    reply = Reply(reasoning="think first", text="then answer", chunks=4)
    with ScriptedModel([reply]) as model:
        client = RecordingClient()
        async with hosted_crow(client, crow_env(crow_home, model.base_url), cwd=str(tmp_path)) as (conn, _):
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            response = await conn.prompt(session_id=session.session_id, prompt=[text("hi")])
    assert response.stop_reason == "end_turn"
    thoughts, chunks = client.of("agent_thought_chunk"), client.of("agent_message_chunk")
    assert "".join(u.content.text for u in thoughts) == "think first"
    assert client.text() == "then answer" and len(chunks) > 1
    assert len({u.message_id for u in thoughts + chunks}) == 1 and chunks[0].message_id
