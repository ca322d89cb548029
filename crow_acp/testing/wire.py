"""The scripted model's data (replies, tool calls, faults) and the HTTP framing it speaks (render.py: the bodies)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.client import responses
from typing import Any, Protocol


@dataclass
class ToolCall:  # one tool call the model "makes"
    name: str
    arguments: dict | str  # a str is sent verbatim so tests can send invalid JSON
    id: str | None = None  # None: "call_<n>", unique per server


@dataclass
class Reply:  # one scripted model response
    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    chunks: int | None = None  # None: ~4 chars per chunk, roughly token-sized
    finish_reason: str | None = None
    usage: dict | None = None
    delay: float = 0.0
    first_delay: float = 0.0
    hold_after: int | None = None  # stream this many events (the role chunk first), then hold until stop()
    redacted: bool = False  # /v1/messages: a redacted_thinking block before the reply (after any thinking)


@dataclass
class Fault:  # an injected failure sent instead of a reply
    status: int = 500
    message: str = "scripted fault"
    retry_after: float | None = None
    cut_after: int | None = None  # 200, this many chunks of `reply`, then an abrupt close
    reply: Reply | None = None
    hang: bool = False  # headers, then silence until stop()
    event: str | None = None  # /v1/messages, /v1/responses: after cut_after events, "error" (the API's error
    # event, ending the stream) or another name (an event type no client knows; the stream goes on)


Responder = Callable[[dict], Reply | Fault]
Entry = Reply | Fault | Responder
Writer = asyncio.StreamWriter

# OpenAI's (type, code) per status, so clients that inspect error bodies behave as in production.
_ERROR_KINDS = {401: ("invalid_request_error", "invalid_api_key"), 429: ("requests", "rate_limit_exceeded")}


def _error_body(status: int, message: str) -> dict:
    kind, code = _ERROR_KINDS.get(status, ("server_error" if status >= 500 else "invalid_request_error", None))
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _head(status: int, headers: dict[str, Any], keep: bool) -> bytes:
    headers = headers | {"Connection": "keep-alive" if keep else "close"}
    lines = [f"HTTP/1.1 {status} {responses.get(status, 'Unknown')}"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def is_title_request(req: dict) -> bool:
    from ..acp.prompt.titles import TITLE_PROMPT

    messages = req.get("messages")
    return (
        isinstance(messages, list)
        and bool(messages)
        and isinstance(messages[0], dict)
        and messages[0].get("content") == TITLE_PROMPT
    )


async def _write_chunk(writer: Writer, data: bytes) -> None:
    # One HTTP chunk per SSE event, drained at once: clients must see each delta as produced.
    writer.write(b"%x\r\n%s\r\n" % (len(data), data))
    await writer.drain()


class Host(Protocol):
    """What a wire's route (anthropic_wire, responses_wire) uses of the ScriptedModel that serves it."""

    model: str
    requests: list[dict]
    headers: list[dict]
    title_requests: list[dict]
    titles: Entry | None
    _lock: threading.Lock

    def calls(self, reply: Reply) -> list[tuple[str, str, str]]: ...

    async def _send_json(
        self, writer: Writer, status: int, obj: dict, keep: bool, extra: dict | None = None
    ) -> None: ...

    async def _send_stream_head(self, writer: Writer, content_type: str, keep: bool) -> None: ...

    async def _next_entry(self, req: dict) -> Reply | Fault: ...

    async def _answer(self, entry: Entry, req: dict) -> Reply | Fault: ...
