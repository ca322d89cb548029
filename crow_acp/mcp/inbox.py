"""What crow's MCP client receives from a server, on every transport, before the SDK acts on it.

The SDK's transports hand on a message they could not parse as an exception, which the SDK then
only logs: a call waiting for that answer waits out `timeouts.mcp_call`. Here such a message gets a
second chance, and a connection's end is noticed as soon as it happens:

- text that Python's lenient JSON reader accepts (lone surrogate escapes, raw control characters
  in strings: the stdio guard repairs these before they get here, the SSE transport does not) is
  read, cleaned of invalid Unicode and handed on as the message it is;
- an answer of the wrong shape (a result that is not an object, an error without its code) becomes
  an error answer for its id, so its call fails at once and says why;
- a tool list keeps the tools the SDK can read: one tool whose input schema is not an object schema
  would otherwise fail the whole list, and with it the server's start;
- anything else (a line of garbage, a JSON array) is dropped, as the SDK would;
- the end of the stream (the server exited or closed its connection) is reported to `on_end`, so
  a server that died while idle is noticed before its next use.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio

from ..util.text import clean_value

log = logging.getLogger(__name__)
INTERNAL_ERROR = -32603


@asynccontextmanager
async def watched(transport: Any, on_end: Callable[[], None]) -> AsyncIterator[tuple[Any, Any]]:
    """`transport` (an MCP SDK transport) with its incoming messages checked as above."""
    async with transport as (read, write):
        send, receive = anyio.create_memory_object_stream[Any](0)
        async with anyio.create_task_group() as group:
            group.start_soon(_forward, read, send, on_end)
            try:
                yield receive, write
            finally:
                group.cancel_scope.cancel()


async def _forward(read: Any, send: Any, on_end: Callable[[], None]) -> None:
    async with send:
        try:
            async for item in read:
                if isinstance(item, Exception) and (item := recovered(item)) is None:
                    continue
                await send.send(_without_broken_tools(item))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return  # crow's own side closed: a close, not the server's end
        on_end()


def recovered(error: Exception) -> Any:
    """The message an unparseable one was meant to be (a SessionMessage), or None to drop it."""
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter
    from pydantic import ValidationError

    value = _sent_value(error)
    if value is _NOTHING:
        return _unreadable_answer(error)
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_python(clean_value(value), by_name=False))
    except ValidationError as invalid:
        return _error_answer(value, invalid)


_NOTHING = object()


def _unreadable_answer(error: Exception) -> Any:
    """An error answer for text that is no JSON at all (cut short, nested too deep) but starts like an answer."""
    from mcp.shared.message import SessionMessage
    from mcp_types import ErrorData, JSONRPCError
    from pydantic import ValidationError

    from .relay import KEEP, answer_id

    detail = (
        next((d for d in error.errors() if d["type"] == "json_invalid"), None)
        if isinstance(error, ValidationError)
        else None
    )
    text = detail and detail.get("input")
    raw = text.encode("utf-8", "replace") if isinstance(text, str) else text if isinstance(text, bytes) else b""
    if not (found := answer_id(raw[:KEEP], raw[-KEEP:])):
        log.warning("MCP server sent a message crow cannot read: %.200s", error)
        return None
    message = f"the MCP server's answer could not be read ({detail['msg'][:200] if detail else 'not JSON'})"
    request_id = json.loads(found)
    return SessionMessage(
        JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=INTERNAL_ERROR, message=message))
    )


def _without_broken_tools(item: Any) -> Any:
    """A tools/list answer without the tools that do not validate (each one logged)."""
    from mcp_types import JSONRPCResponse, _v2025_11_25, _v2026_07_28
    from pydantic import ValidationError

    message = getattr(item, "message", None)
    if not (isinstance(message, JSONRPCResponse) and isinstance(tools := message.result.get("tools"), list)):
        return item
    kept = []
    for tool in tools:
        try:
            for wire in (_v2025_11_25, _v2026_07_28):  # each protocol version's stricter wire model
                wire.Tool.model_validate(tool, by_name=False)
            kept.append(tool)
        except ValidationError as invalid:
            name = tool.get("name") if isinstance(tool, dict) else None
            log.warning(
                "MCP tool %.100r left out: %s", name, malformed(invalid).removeprefix("the MCP server's answer was ")
            )
    message.result["tools"] = kept
    return item


def _sent_value(error: Exception) -> Any:
    """The JSON value the server sent, taken from the SDK's parse error; _NOTHING if it was not JSON."""
    from pydantic import ValidationError

    if not isinstance(error, ValidationError):
        return _NOTHING
    for detail in error.errors(include_url=False, include_context=False):
        if detail["type"] == "json_invalid" and isinstance(text := detail.get("input"), (str, bytes)):
            try:
                return json.loads(text, strict=False)  # accepts lone surrogates and raw control characters
            except (ValueError, RecursionError):
                return _NOTHING
        if detail["type"] in ("missing", "model_type") and len(detail["loc"]) <= 2:
            return detail.get("input")  # a top-level problem: its input is the whole message
    return _NOTHING


def _error_answer(value: Any, invalid: Any) -> Any:
    """An error answer for a malformed answer with a usable id; None for anything else."""
    from mcp.shared.message import SessionMessage
    from mcp_types import ErrorData, JSONRPCError

    request_id = value.get("id") if isinstance(value, dict) and "method" not in value else None
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
        log.warning("MCP server sent a malformed message; dropped: %.200s", invalid)
        return None
    message = malformed(invalid, "JSONRPCError" if "error" in value else "JSONRPCResponse")
    return SessionMessage(
        JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=INTERNAL_ERROR, message=message))
    )


def malformed(invalid: Any, model: str | None = None) -> str:
    """What was wrong with an answer, from pydantic's ValidationError (only `model`'s part of a union)."""
    skip = 1 if model else 0
    problems = [
        f"{'.'.join(map(str, detail['loc'][skip:])) or 'the message'}: {detail['msg']}"
        for detail in invalid.errors(include_url=False, include_context=False)
        if model is None or detail["loc"][:1] == (model,)
    ]
    return f"the MCP server's answer was malformed ({'; '.join(problems[:3])[:300]})"
