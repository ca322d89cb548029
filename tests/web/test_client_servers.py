"""A `crow serve` client's HTTP and SSE MCP servers, as the SSRF probe named them: a metadata-like URL on the
server's loopback (a listener this test runs, which must see no connection), by address, by a name that
resolves there, as an IPv4-mapped IPv6 address. What the operator lists with --allow-client-url connects."""

from __future__ import annotations

import asyncio

import anyio
import pytest
from acp.schema import HttpHeader, HttpMcpServer, SseMcpServer
from support.helpers import RecordingClient, crow_env, echo_remote, text
from support.records import results
from support.serve_support import crow_serve, over_ws

from crow_acp.mcp.address_guard import ClientUrls, forbidden
from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio


async def test_a_client_cannot_point_the_server_at_its_own_network(crow_home, tmp_path):
    accepted: list[int] = []

    async def note(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        writer.close()

    listener = await asyncio.start_server(note, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    secret = [HttpHeader(name="Authorization", value="Bearer client-secret")]
    servers = [
        HttpMcpServer(type="http", name="meta", url=f"http://127.0.0.1:{port}/latest/meta-data/iam", headers=secret),
        HttpMcpServer(type="http", name="named", url=f"http://localhost:{port}/mcp", headers=[]),
        HttpMcpServer(type="http", name="mapped", url=f"http://[::ffff:127.0.0.1]:{port}/mcp", headers=[]),
        SseMcpServer(type="sse", name="events", url=f"http://127.0.0.1:{port}/sse", headers=[]),
    ]
    client = RecordingClient()
    async with listener, ScriptedModel([Reply(text="ok")]) as model:
        async with crow_serve(crow_env(crow_home, model.base_url), roots=(str(tmp_path),)) as served:
            with anyio.fail_after(90):
                async with over_ws(client, served) as conn:
                    sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=servers)).session_id
                    await conn.prompt(session_id=sid, prompt=[text("hi")])  # waits for the servers to start
    said = " ".join(str(update) for update in client.updates)
    for name in ("meta", "named", "mapped", "events"):
        assert f"MCP server '{name}' is unavailable" in said
    assert "a loopback address" in said and "--allow-client-url" in said
    assert accepted == [], "the listener on the server's loopback was never contacted"


async def test_what_the_operator_allows_connects(crow_home, tmp_path):
    async with echo_remote("http") as echo:
        call = ToolCall("web__echo", {"text": "allowed"}, id="e1")
        async with ScriptedModel([Reply(tool_calls=[call]), Reply(text="done")]) as model:
            port = echo.url.split(":")[2].split("/")[0]
            env = crow_env(crow_home, model.base_url)
            async with crow_serve(env, f"--allow-client-url=127.0.0.1:{port}", roots=(str(tmp_path),)) as served:
                with anyio.fail_after(90):
                    async with over_ws(RecordingClient(), served) as conn:
                        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[echo])).session_id
                        await conn.prompt(session_id=sid, prompt=[text("echo")])
    assert results(model.requests[1])["e1"] == "echo: allowed"


def test_which_addresses_and_entries():
    assert [forbidden(a) for a in ("169.254.169.254", "10.1.2.3", "fe80::1%eth0", "fd00::1", "0.0.0.0")] == [
        "link-local",
        "private",
        "link-local",
        "private",
        "private",  # Python counts 0.0.0.0/8 as private, before unspecified
    ]
    assert forbidden("224.0.0.1") == "multicast" and forbidden("100.64.0.1") == "not global"
    assert forbidden("93.184.215.14") is None and forbidden("2606:4700::1111") is None
    urls = ClientUrls(("mcp.internal", "10.0.0.5:8080", "http://127.0.0.1:9000/mcp"))
    assert urls.allows("http://mcp.internal:1234/x") and urls.allows("https://10.0.0.5:8080/")
    assert not urls.allows("http://10.0.0.5:8081/") and not urls.allows("http://evil.example/mcp.internal")
    assert urls.allows("http://127.0.0.1:9000/mcp") and urls.allows("http://127.0.0.1:9000/mcp/tools")
    assert not urls.allows("http://127.0.0.1:9000/mcpx") and not urls.allows("http://127.0.0.1:90001/mcp")
