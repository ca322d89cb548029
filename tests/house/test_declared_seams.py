"""Seams crow checks by declared type rather than by sniffing attributes: the editor's MCP servers
(by their ACP type) and the client's file-system capabilities."""

from __future__ import annotations

from types import SimpleNamespace

import anyio
import pytest
from acp import RequestError
from acp.schema import AcpMcpServer, ClientCapabilities, FileSystemCapabilities, HttpMcpServer, SseMcpServer
from support.helpers import CORE_AGENT, RecordingClient, crow_env, echo_stdio, in_process, run_crow

from crow_acp import AcpAgent, load_config
from crow_acp.editor.common import client_can
from crow_acp.mcp.specs import server_specs
from crow_acp.testing import Reply, ScriptedModel

pytestmark = pytest.mark.anyio

ACP_SERVER = AcpMcpServer(type="acp", name="inline", server_id="srv-1")


def test_editor_servers_become_specs_by_their_acp_type():
    http = HttpMcpServer(type="http", name="h", url="http://127.0.0.1:1/mcp", headers=[{"name": "A", "value": "b"}])
    sse = SseMcpServer(type="sse", name="s", url="http://127.0.0.1:1/sse", headers=[])
    specs = server_specs([echo_stdio("e"), http, sse], {})
    assert [(s.name, s.transport) for s in specs] == [("e", "stdio"), ("h", "http"), ("s", "sse")]
    assert specs[1].headers == {"A": "b"} and specs[1].url == "http://127.0.0.1:1/mcp"
    with pytest.raises(RequestError) as raised:
        server_specs([ACP_SERVER], {})
    assert "'inline': transport 'acp' is not supported" in str(raised.value.data)


async def test_an_unadvertised_server_kind_is_refused_before_any_session_exists(crow_home, tmp_path):
    async with in_process(AcpAgent(load_config(home=crow_home))) as agent:
        with anyio.fail_after(20), pytest.raises(RequestError) as raised:
            await agent.new_session(cwd=str(tmp_path), mcp_servers=[ACP_SERVER])
        assert raised.value.code == -32602
        assert agent.sessions == {}
        assert (await agent.list_sessions()).sessions == []


async def test_over_stdio_the_editor_gets_invalid_params_and_crow_goes_on(crow_home, tmp_path):
    async with ScriptedModel([Reply(text="fine")]) as model:
        async with run_crow(RecordingClient(), crow_env(crow_home, model.base_url), "--agent", CORE_AGENT) as (conn, _):
            with anyio.fail_after(60):
                with pytest.raises(RequestError) as raised:
                    await conn.new_session(cwd=str(tmp_path), mcp_servers=[ACP_SERVER])
                assert raised.value.code == -32602 and "not supported" in str(raised.value.data)
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                assert (
                    await conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "hi"}])
                ).stop_reason == "end_turn"


def test_client_capabilities_are_read_by_name():
    fs = FileSystemCapabilities(read_text_file=True, write_text_file=False)
    context = SimpleNamespace(client=object(), client_capabilities=ClientCapabilities(fs=fs, terminal=True))
    assert client_can(context, "read_text_file") and client_can(context, "terminal")
    assert not client_can(context, "write_text_file")
    detached = SimpleNamespace(client=None, client_capabilities=context.client_capabilities)
    assert not client_can(detached, "read_text_file")
