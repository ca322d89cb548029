"""Where a session/load replay goes: many session/update notifications for one session, in order.

Over stdio (and in process) each update goes through the SDK connection, one notification at a time.
`crow serve` gives its agents a sink that serializes the replay once and hands it to the connection
as one item (crow_acp/web/outbound.py): the same notifications on the wire, without the SDK's queue,
task switches and socket write per update. An image the user sent is stored without its data (the
message holds it): replayed_blocks puts it back.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from ..rpc.door import send_update


class UpdateSink(Protocol):
    async def send_updates(self, session_id: str, updates: Iterable[Any]) -> None:
        """Sends `updates` (ACP session update models) in order; returns once they are queued ahead of
        anything the agent sends after (the load response among it)."""


class OneByOne:
    """The SDK's connection: one `session/update` per update."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    async def send_updates(self, session_id: str, updates: Iterable[Any]) -> None:
        for update in updates:
            await send_update(self.conn, session_id, update)


def replayed_blocks(message: dict[str, Any], blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stored blocks with each image's data put back from the message's image parts, in order."""
    content = message.get("content")
    urls = iter(
        [p["image_url"]["url"] for p in content if p.get("type") == "image_url"] if isinstance(content, list) else []
    )
    out = []
    for block in blocks:
        if block.get("type") == "image" and not block.get("data"):
            url = next(urls, "")
            block = {**block, "data": url.partition("base64,")[2]}
        out.append(block)
    return out
