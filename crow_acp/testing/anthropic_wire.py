"""The scripted model's /v1/messages: Anthropic's SSE event shapes, and the checks the real API makes.

The shapes follow the SDK's own types (anthropic/types: RawMessageStartEvent, RawContentBlockStartEvent,
RawContentBlockDeltaEvent with text_delta, thinking_delta, signature_delta and input_json_delta,
RawMessageDeltaEvent, RawMessageStopEvent, ping, and the error event). A request the real API would
refuse is refused with its error shape (400 invalid_request_error):

    - more than 4 cache_control breakpoints;
    - a thinking block whose signature is not the one this server gave its text (unsigned or altered);
    - a tool_result with no tool_use of that id in the message right before, or a tool_use left unanswered;
    - turns that do not alternate, or do not start with the user;
    - thinking enabled, and the assistant turn of a running tool loop does not start with its thinking.

Cache reads are reported as the real API does: a prefix that ended at a breakpoint of an earlier request
(looked up from each breakpoint, up to 20 blocks back) is read; what lies between it and the last
breakpoint is written; the rest is plain input.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import secrets
from typing import Any

from .render import _split
from .wire import Fault, Host, Reply, Writer, _write_chunk

LOOKBACK = 20
MAX_BREAKPOINTS = 4
_KINDS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def error_body(status: int, message: str) -> dict[str, Any]:
    kind = _KINDS.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


class AnthropicState:
    """Per server: the key its thinking signatures are made with, and the prefixes its cache holds."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(16)
        self._cached: set[str] = set()
        self._ids = itertools.count(1)

    def sign(self, thinking: str) -> str:
        return hmac.new(self._key, thinking.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()

    def problem(self, req: dict[str, Any]) -> str | None:
        """What the real API would refuse in `req`, or None."""
        messages = req.get("messages")
        if not isinstance(messages, list) or not messages or not isinstance(req.get("max_tokens"), int):
            return "messages: a non-empty list is required, and max_tokens"
        marks = sum(1 for block in _blocks(req) if isinstance(block, dict) and "cache_control" in block)
        if marks > MAX_BREAKPOINTS:
            return f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {marks}."
        previous_calls: set[str] = set()
        for n, message in enumerate(messages):
            role, content = message.get("role"), message.get("content")
            if isinstance(content, str) and content:  # the real API takes a string as one text block
                content = [{"type": "text", "text": content}]
            if role != ("user" if n % 2 == 0 else "assistant") or not isinstance(content, list):
                return f"messages.{n}: roles must alternate user/assistant, starting with user, content a list"
            if problem := self._message_problem(n, role, content, previous_calls):
                return problem
            previous_calls = (
                {b.get("id") for b in content if b.get("type") == "tool_use"} if role == "assistant" else set()
            )
        if previous_calls:
            return f"messages.{len(messages) - 1}: tool_use ids were found without tool_result blocks"
        if (req.get("thinking") or {}).get("type") == "enabled":
            return _loop_thinking(messages)
        return None

    def _message_problem(self, n: int, role: str, content: list[Any], calls: set[str]) -> str | None:
        answered = set()
        for m, block in enumerate(content):
            kind = block.get("type") if isinstance(block, dict) else None
            where = f"messages.{n}.content.{m}"
            if kind == "thinking" and (
                role != "assistant" or block.get("signature") != self.sign(block.get("thinking") or "")
            ):
                return f"{where}: Invalid `signature` in `thinking` block"
            if kind == "redacted_thinking" and block.get("data") != "redacted:" + self.sign("redacted"):
                return f"{where}: Invalid `data` in `redacted_thinking` block"
            if kind == "tool_result":
                if block.get("tool_use_id") not in calls:
                    return (
                        f"{where}: unexpected `tool_use_id` found in `tool_result` blocks: {block.get('tool_use_id')}. "
                        "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                    )
                answered.add(block.get("tool_use_id"))
            if kind == "text" and not block.get("text"):
                return f"{where}: text content blocks must be non-empty"
        if calls - answered:
            missing = sorted(calls - answered)
            return f"messages.{n}: tool_use ids were found without tool_result blocks immediately after: {missing}"
        return None

    def usage(self, req: dict[str, Any], output_tokens: int) -> dict[str, int]:
        """The usage the real API reports: cache reads of earlier prefixes, writes up to the last breakpoint."""
        running, hashes, tokens, marks = hashlib.sha256(), [], [], []
        total = 0
        for block in _blocks(req):
            plain = {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block
            text = json.dumps(plain, sort_keys=True)
            running.update(text.encode())
            hashes.append(running.copy().hexdigest())
            total += max(len(text) // 4, 1)
            tokens.append(total)
            if isinstance(block, dict) and "cache_control" in block:
                marks.append(len(hashes) - 1)
        read = 0
        for mark in marks:
            for position in range(mark, max(mark - LOOKBACK, -1), -1):
                if hashes[position] in self._cached:
                    read = max(read, tokens[position])
                    break
        end = tokens[marks[-1]] if marks else 0
        self._cached.update(hashes[mark] for mark in marks)
        written = max(end - read, 0)
        return {
            "input_tokens": total - read - written,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
            "output_tokens": output_tokens,
        }

    def events(self, server: Host, reply: Reply, req: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """The SSE events of `reply`, as (event name, data)."""
        output = len(reply.text) // 4 + len(reply.reasoning) // 4 + 1
        usage = reply.usage or self.usage(req, output)
        message: dict[str, Any] = {
            "id": f"msg_{next(self._ids)}",
            "type": "message",
            "role": "assistant",
            "model": server.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**usage, "output_tokens": 1},
        }
        out: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": message})]
        out.append(("ping", {"type": "ping"}))
        blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
        if reply.reasoning:
            deltas = [{"type": "thinking_delta", "thinking": piece} for piece in _split(reply.reasoning, None)]
            deltas.append({"type": "signature_delta", "signature": self.sign(reply.reasoning)})
            blocks.append(({"type": "thinking", "thinking": "", "signature": ""}, deltas))
        if reply.redacted:
            blocks.append(({"type": "redacted_thinking", "data": "redacted:" + self.sign("redacted")}, []))
        if reply.text:
            blocks.append(
                (
                    {"type": "text", "text": ""},
                    [{"type": "text_delta", "text": p} for p in _split(reply.text, reply.chunks)],
                )
            )
        for call_id, name, args in server.calls(reply):
            pieces = _split(args, max(3, -(-len(args) // 16)))
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
            blocks.append(
                ({"type": "tool_use", "id": call_id.replace("call_", "toolu_"), "name": name, "input": {}}, deltas)
            )
        for index, (start, deltas) in enumerate(blocks):
            out.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}))
            out += [
                ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas
            ]
            out.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        stop = reply.finish_reason or ("tool_use" if reply.tool_calls else "end_turn")
        stop = {"tool_calls": "tool_use", "stop": "end_turn", "length": "max_tokens"}.get(stop, stop)
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        }
        return [*out, ("message_delta", delta), ("message_stop", {"type": "message_stop"})]

    def message(self, server: Host, reply: Reply, req: dict[str, Any]) -> dict[str, Any]:
        """The non-streamed reply."""
        usage = reply.usage or self.usage(req, len(reply.text) // 4 + 1)
        content = [{"type": "text", "text": reply.text}] if reply.text else []
        return {
            "id": f"msg_{next(self._ids)}",
            "type": "message",
            "role": "assistant",
            "model": server.model,
            "content": content,
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }


def _blocks(req: dict[str, Any]) -> list[Any]:
    """Every block of the request in the order the cache reads them: tools, system, messages."""
    system = req.get("system")
    out: list[Any] = list(req.get("tools") or [])
    out += [{"type": "text", "text": system}] if isinstance(system, str) else list(system or [])
    for message in req.get("messages") or ():
        content = message.get("content") if isinstance(message, dict) else None
        out += [{"role": message.get("role")}]
        out += [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
    return out


def _loop_thinking(messages: list[dict[str, Any]]) -> str | None:
    for n in range(len(messages) - 1, -1, -1):
        content = messages[n]["content"]
        if messages[n]["role"] == "user" and not (content and content[0].get("type") == "tool_result"):
            return None
        if messages[n]["role"] == "assistant" and any(b.get("type") == "tool_use" for b in content):
            if content[0].get("type") not in ("thinking", "redacted_thinking"):
                return (
                    f"messages.{n}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                    f"`{content[0].get('type')}`. When `thinking` is enabled, a final `assistant` message must "
                    "start with a thinking block."
                )
    return None


async def serve(
    state: AnthropicState, server: Host, writer: Writer, body: bytes, headers: dict[str, str], keep: bool
) -> bool:
    """One POST /v1/messages."""
    from ..acp.prompt.titles import TITLE_PROMPT

    try:
        req = json.loads(body or b"{}")
    except ValueError:
        req = None
    if not isinstance(req, dict):
        await server._send_json(writer, 400, error_body(400, "body must be a JSON object"), keep)
        return keep
    system = req.get("system")
    if isinstance(system, list) and system and isinstance(system[0], dict) and system[0].get("text") == TITLE_PROMPT:
        server.title_requests.append(req)
        entry = await server._answer(server.titles or Fault(400, "this scripted model writes no titles"), req)
    else:
        with server._lock:
            server.requests.append(req)
            server.headers.append(headers)
        if problem := state.problem(req):
            await server._send_json(writer, 400, error_body(400, problem), keep)
            return keep
        entry = await server._next_entry(req)
    if isinstance(entry, Fault) and entry.cut_after is None:
        extra = {} if entry.retry_after is None else {"Retry-After": f"{entry.retry_after:g}"}
        await server._send_json(writer, entry.status, error_body(entry.status, entry.message), keep, extra)
        return keep
    reply = entry if isinstance(entry, Reply) else (entry.reply or Reply(text=entry.message))
    if not req.get("stream"):
        await server._send_json(writer, 200, state.message(server, reply, req), keep)
        return keep
    events = state.events(server, reply, req)
    await server._send_stream_head(writer, "text/event-stream", keep)
    fault = entry if isinstance(entry, Fault) else None
    for n, (name, data) in enumerate(events):
        if fault is not None and n == fault.cut_after:
            if fault.event is None:  # half an event, then the connection closes mid-message
                await _write_chunk(writer, f"event: {name}\ndata: {json.dumps(data)}"[:24].encode())
                return False
            if fault.event == "error":
                await _send(writer, "error", error_body(fault.status, fault.message))
                break
            await _send(writer, fault.event, {"type": fault.event})  # an event type the client does not know
        if n == reply.hold_after:
            await asyncio.Event().wait()  # only stop() ends this
        if n and reply.delay:
            await asyncio.sleep(reply.delay)
        await _send(writer, name, data)
    await _write_chunk(writer, b"")
    return keep


async def _send(writer: Writer, name: str, data: dict[str, Any]) -> None:
    await _write_chunk(writer, f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
