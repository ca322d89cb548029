"""How a scripted Reply looks on the wire: an OpenAI chat completion, or the chunks of its SSE stream,
shaped as OpenAI, vLLM and DeepSeek send them (server.py frames and sends them)."""

from __future__ import annotations

import itertools
import json
import re
import time
from typing import Any

from .wire import Reply


class Render:
    """Numbers completions and tool calls per server, so every reply's ids are unique."""

    def __init__(self, model: str) -> None:
        self.model = model
        self._call_ids, self._completion_ids = itertools.count(1), itertools.count(1)

    def calls(self, reply: Reply) -> list[tuple[str, str, str]]:
        """(id, name, arguments string) per tool call; ids are drawn per send so a reused Reply stays unique."""
        args = [c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments) for c in reply.tool_calls]
        return [
            (c.id or f"call_{next(self._call_ids)}", c.name, a) for c, a in zip(reply.tool_calls, args, strict=True)
        ]

    def deltas(self, reply: Reply) -> list[dict]:
        deltas: list[dict] = [{"role": "assistant", "content": ""}]
        deltas += [{"reasoning_content": piece} for piece in _split(reply.reasoning, None)]
        deltas += [{"content": piece} for piece in _split(reply.text, reply.chunks)]
        for i, (call_id, name, args) in enumerate(self.calls(reply)):
            function = {"name": name, "arguments": ""}
            deltas.append({"tool_calls": [{"index": i, "id": call_id, "type": "function", "function": function}]})
            pieces = _split(args, max(3, -(-len(args) // 16)))  # several fragments, like real providers
            deltas += [{"tool_calls": [{"index": i, "function": {"arguments": p}}]} for p in pieces]
        return deltas

    def completion(self, reply: Reply, req: dict) -> dict:
        calls = self.calls(reply)
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or (None if calls else "")}
        if calls:
            tool_calls = [{"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls]
            message["tool_calls"] = tool_calls
        if reply.reasoning:
            message["reasoning_content"] = reply.reasoning
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason(reply)}
        head = {
            "id": f"chatcmpl-{next(self._completion_ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
        }
        return head | {"model": self.model, "choices": [choice], "usage": usage_of(reply, req)}

    def stream(self, reply: Reply, req: dict, cut_after: int | None = None) -> list[dict]:
        """The SSE events' JSON, in order; `cut_after` keeps only that many chunks, without an end."""
        base: dict[str, Any] = {"id": f"chatcmpl-{next(self._completion_ids)}", "object": "chat.completion.chunk"}
        base |= {"created": int(time.time()), "model": self.model}
        with_usage = bool((req.get("stream_options") or {}).get("include_usage"))
        if with_usage:
            base["usage"] = None  # OpenAI marks every non-final chunk like this when usage is requested

        def chunk(delta: dict, finish: str | None = None) -> dict:
            return base | {"choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

        events = [chunk(delta) for delta in self.deltas(reply)]
        if cut_after is not None:
            return events[:cut_after]
        events.append(chunk({}, finish_reason(reply)))
        if with_usage:
            events.append(base | {"choices": [], "usage": usage_of(reply, req)})
        return events


def _split(text: str, n: int | None) -> list[str]:
    """Split text into n near-equal pieces, or token-sized pieces when n is None."""
    if not text:
        return []
    if n is None:
        return re.findall(r"\s*\S{1,4}|\s+", text)
    n = max(1, min(n, len(text)))  # never emit empty deltas
    size, extra = divmod(len(text), n)
    bounds = list(itertools.accumulate([0] + [size + (i < extra) for i in range(n)]))
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def finish_reason(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def usage_of(reply: Reply, req: dict) -> dict:
    if reply.usage is not None:
        return reply.usage
    prompt = len(json.dumps(req.get("messages", []))) // 4
    completion = len(reply.text) // 4 + 1
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
