"""The scripted model's /v1/responses: the Responses API's SSE event shapes, and the checks it makes.

The shapes follow the openai SDK's types (openai/types/responses: ResponseCreatedEvent,
ResponseOutputItemAddedEvent, ResponseReasoningSummaryTextDeltaEvent, ResponseTextDeltaEvent,
ResponseFunctionCallArgumentsDeltaEvent, ResponseOutputItemDoneEvent, ResponseCompletedEvent, the
error event). Refused with OpenAI's error shape (400 invalid_request_error), as the real API does:

    - a function_call_output whose call_id no earlier function_call item has;
    - a reasoning item whose encrypted_content is not what this server gave it (unsigned or altered).

cached_tokens: the longest run of leading input items an earlier request also began with.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import secrets
import time
from typing import Any

from .render import _split
from .wire import Fault, Host, Reply, Writer, _error_body, _write_chunk


class ResponsesState:
    def __init__(self) -> None:
        self._key = secrets.token_bytes(16)
        self._seen: set[str] = set()
        self._ids = itertools.count(1)

    def seal(self, item_id: str, summary: str) -> str:
        return "enc:" + hmac.new(self._key, f"{item_id}\n{summary}".encode(), hashlib.sha256).hexdigest()

    def problem(self, req: dict[str, Any]) -> str | None:
        items = req.get("input")
        if not isinstance(items, list):
            return "input: a list of items is required"
        calls: set[str] = set()
        for n, item in enumerate(items):
            kind = item.get("type") if isinstance(item, dict) else None
            if kind == "function_call":
                calls.add(str(item.get("call_id")))
            elif kind == "function_call_output" and item.get("call_id") not in calls:
                return f"No tool call found for function call output with call_id {item.get('call_id')}."
            elif kind == "reasoning":
                summary = "".join(part.get("text", "") for part in item.get("summary") or ())
                if item.get("encrypted_content") != self.seal(str(item.get("id")), summary):
                    return f"input[{n}]: The encrypted content for item {item.get('id')} could not be verified."
        return None

    def usage(self, req: dict[str, Any], output: int) -> dict[str, Any]:
        running, total, cached = hashlib.sha256(), 0, 0
        for item in [*(req.get("tools") or []), *req["input"]]:
            text = json.dumps(item, sort_keys=True)
            running.update(text.encode())
            total += max(len(text) // 4, 1)
            digest = running.hexdigest()
            if digest in self._seen and cached == total - max(len(text) // 4, 1):
                cached = total
            self._seen.add(digest)
        return {"input_tokens": total, "input_tokens_details": {"cached_tokens": cached}, "output_tokens": output,
                "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": total + output}  # fmt: skip

    def output(self, server: Host, reply: Reply) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
        """Each output item when done, with the delta events that build it."""
        out: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
        if reply.reasoning:
            item_id = f"rs_{next(self._ids)}"
            deltas = [{"type": "response.reasoning_summary_text.delta", "item_id": item_id, "summary_index": 0,
                       "delta": piece} for piece in _split(reply.reasoning, None)]  # fmt: skip
            summary = [{"type": "summary_text", "text": reply.reasoning}]
            item = {"type": "reasoning", "id": item_id, "summary": summary,
                    "encrypted_content": self.seal(item_id, reply.reasoning)}  # fmt: skip
            out.append((item, deltas))
        if reply.text:
            item_id = f"msg_{next(self._ids)}"
            deltas = [{"type": "response.output_text.delta", "item_id": item_id, "content_index": 0, "delta": piece,
                       "logprobs": []} for piece in _split(reply.text, reply.chunks)]  # fmt: skip
            content = [{"type": "output_text", "text": reply.text, "annotations": []}]
            item = {"type": "message", "id": item_id, "status": "completed", "role": "assistant", "content": content}
            out.append((item, deltas))
        for call_id, name, args in server.calls(reply):
            item_id = f"fc_{next(self._ids)}"
            deltas = [{"type": "response.function_call_arguments.delta", "item_id": item_id, "delta": piece}
                      for piece in _split(args, max(3, -(-len(args) // 16)))]  # fmt: skip
            item = {"type": "function_call", "id": item_id, "call_id": call_id, "name": name, "arguments": args,
                    "status": "completed"}  # fmt: skip
            out.append((item, deltas))
        return out

    def events(self, server: Host, reply: Reply, req: dict[str, Any]) -> list[dict[str, Any]]:
        response = {"id": f"resp_{next(self._ids)}", "object": "response", "created_at": int(time.time()),
                    "status": "in_progress", "model": server.model, "output": [], "usage": None}  # fmt: skip
        events: list[dict[str, Any]] = [{"type": "response.created", "response": response}]
        events.append({"type": "response.in_progress", "response": response})
        items = self.output(server, reply)
        for index, (item, deltas) in enumerate(items):
            started = {**item, "status": "in_progress"} if item["type"] != "reasoning" else {**item, "summary": []}
            if item["type"] == "function_call":
                started["arguments"] = ""
            if item["type"] == "message":
                started["content"] = []
            events.append({"type": "response.output_item.added", "output_index": index, "item": started})
            events += [{**delta, "output_index": index} for delta in deltas]
            events.append({"type": "response.output_item.done", "output_index": index, "item": item})
        output = len(reply.text) // 4 + len(reply.reasoning) // 4 + 1
        status = "incomplete" if reply.finish_reason == "length" else "completed"
        usage = reply.usage or self.usage(req, output)
        done = {**response, "status": status, "output": [item for item, _ in items], "usage": usage}
        events.append({"type": f"response.{status}", "response": done})
        return [{**event, "sequence_number": n} for n, event in enumerate(events)]

    def response(self, server: Host, reply: Reply, req: dict[str, Any]) -> dict[str, Any]:
        return self.events(server, reply, req)[-1]["response"]


async def serve(
    state: ResponsesState, server: Host, writer: Writer, body: bytes, headers: dict[str, str], keep: bool
) -> bool:
    """One POST /v1/responses."""
    try:
        req = json.loads(body or b"{}")
    except ValueError:
        req = None
    if not isinstance(req, dict):
        await server._send_json(writer, 400, _error_body(400, "body must be a JSON object"), keep)
        return keep
    if _is_title(req):  # crow's side call for a session title: outside the script
        server.title_requests.append(req)
        entry = await server._answer(server.titles or Fault(400, "this scripted model writes no titles"), req)
    else:
        with server._lock:
            server.requests.append(req)
            server.headers.append(headers)
        if problem := state.problem(req):
            await server._send_json(writer, 400, _error_body(400, problem), keep)
            return keep
        entry = await server._next_entry(req)
    if isinstance(entry, Fault) and entry.cut_after is None:
        extra = {} if entry.retry_after is None else {"Retry-After": f"{entry.retry_after:g}"}
        await server._send_json(writer, entry.status, _error_body(entry.status, entry.message), keep, extra)
        return keep
    reply = entry if isinstance(entry, Reply) else (entry.reply or Reply(text=entry.message))
    if not req.get("stream"):
        await server._send_json(writer, 200, state.response(server, reply, req), keep)
        return keep
    fault = entry if isinstance(entry, Fault) else None
    await server._send_stream_head(writer, "text/event-stream", keep)
    for n, event in enumerate(state.events(server, reply, req)):
        if fault is not None and n == fault.cut_after:
            if fault.event is None:  # half an event, then the connection closes mid-message
                await _write_chunk(writer, f"event: {event['type']}\ndata: {json.dumps(event)}"[:30].encode())
                return False
            if fault.event == "error":
                error = {"type": "error", "code": "server_error", "message": fault.message, "param": None}
                await _send(writer, error)
                break
            await _send(writer, {"type": fault.event})
        if n == reply.hold_after:
            await asyncio.Event().wait()  # only stop() ends this
        if n and reply.delay:
            await asyncio.sleep(reply.delay)
        await _send(writer, event)
    await _write_chunk(writer, b"")
    return keep


def _is_title(req: dict[str, Any]) -> bool:
    from ..acp.prompt.titles import TITLE_PROMPT

    items = req.get("input")
    first = items[0] if isinstance(items, list) and items and isinstance(items[0], dict) else {}
    parts: list[Any] = first["content"] if isinstance(first.get("content"), list) else []
    return bool(parts) and isinstance(parts[0], dict) and parts[0].get("text") == TITLE_PROMPT


async def _send(writer: Writer, event: dict[str, Any]) -> None:
    await _write_chunk(writer, f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
