"""Raw HTTP and WebSocket against `crow serve`, as a browser page or an attacker sends them: any Host,
any Origin, half a request, a body nested 100,000 deep."""

from __future__ import annotations

import asyncio
import base64
import json
import os
from typing import Any

from support.serve_support import Served


def bearer(served: Served) -> dict[str, str]:
    return {"Authorization": f"Bearer {served.token}"}


async def upgrade_status(served: Served, headers: dict[str, str]) -> int:
    """The status a WebSocket upgrade to /acp gets (101: switched, the socket is open)."""
    host, port = served.url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    key = base64.b64encode(os.urandom(16)).decode()
    lines = {
        "Host": f"{host}:{port}",
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": key,
        "Sec-WebSocket-Version": "13",
        **headers,
    }
    writer.write(("GET /acp HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in lines.items()) + "\r\n").encode())
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    writer.close()
    return status


class RawHttp:
    """One ACP connection over raw HTTP/1.1 (httpx): initialize, its event stream, requests; dropped
    without a DELETE, as by a client that was killed."""

    def __init__(self, http: Any, served: Served) -> None:
        self.http, self.served = http, served
        self.connection_id = ""
        self.stream: Any = None
        self.answers: dict[int, Any] = {}

    async def initialize(self) -> int:
        body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
        response = await self.http.post(self.served.acp, json=body, headers=bearer(self.served))
        self.connection_id = response.headers.get("acp-connection-id", "")
        return response.status_code

    async def open_stream(self) -> None:
        headers = {**bearer(self.served), "Accept": "text/event-stream", "Acp-Connection-Id": self.connection_id}
        request = self.http.build_request("GET", self.served.acp, headers=headers)
        self.stream = await self.http.send(request, stream=True)
        self._lines = self.stream.aiter_lines()

    async def call(self, id_: int, method: str, params: dict[str, Any]) -> Any:
        """Post a request and read the stream up to its answer."""
        headers = {**bearer(self.served), "Acp-Connection-Id": self.connection_id}
        body = {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}
        assert (await self.http.post(self.served.acp, json=body, headers=headers)).status_code == 202
        while id_ not in self.answers:
            line = await anext(self._lines)
            if line.startswith("data:"):
                message = json.loads(line[5:])
                if "id" in message and "method" not in message:
                    self.answers[message["id"]] = message
        return self.answers[id_]
