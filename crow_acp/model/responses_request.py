"""A strict chat history as an OpenAI Responses request: stateless, reasoning carried back encrypted.

    system / user        -> message items (input_text, input_image), where they were
    assistant            -> its own wire's reasoning items first, as they came (encrypted_content
                            included), then an output_text message, then its function_call items
    tool results         -> function_call_output items

`store: false` keeps nothing at OpenAI; `include: ["reasoning.encrypted_content"]` makes each reasoning
item carry what the model needs to go on reasoning from it on the next call.
"""

from __future__ import annotations

from typing import Any

from ..config import ModelProfile
from ..history import attachment_for

WIRE = "responses"
EFFORTS = ("minimal", "low", "medium", "high")


def responses_body(
    profile: ModelProfile, messages: list[dict[str, Any]], tools: list[dict[str, Any]], effort: str | None
) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for message in messages:
        items += _items(message, profile.model)
    body: dict[str, Any] = {"model": profile.model, "input": items, "store": False}
    body["include"] = ["reasoning.encrypted_content"]
    if tools:
        body["tools"] = [_tool(tool) for tool in tools]
    effort = effort or profile.reasoning_effort
    if effort in EFFORTS:
        body["reasoning"] = {"effort": effort, "summary": "auto"}
    if profile.max_tokens is not None:
        body["max_output_tokens"] = profile.max_tokens
    if profile.temperature is not None:
        body["temperature"] = profile.temperature
    return body


def _items(message: dict[str, Any], model: str) -> list[dict[str, Any]]:
    role = message.get("role")
    if role == "tool":
        content = message.get("content")
        output = content if isinstance(content, str) else str(content)
        return [{"type": "function_call_output", "call_id": str(message.get("tool_call_id")), "output": output}]
    if role == "assistant":
        return _assistant(message, model)
    parts = _parts(message.get("content"))
    return [{"type": "message", "role": "system" if role == "system" else "user", "content": parts}] if parts else []


def _parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}] if content else []
    parts: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text" and isinstance(part.get("text"), str) and part["text"]:
            parts.append({"type": "input_text", "text": part["text"]})
        elif part.get("type") == "image_url" and isinstance(url := (part.get("image_url") or {}).get("url"), str):
            parts.append({"type": "input_image", "image_url": url, "detail": "auto"})
    return parts


def _assistant(message: dict[str, Any], model: str) -> list[dict[str, Any]]:
    attachment = attachment_for(message, WIRE, model)  # encrypted reasoning only its own model can read
    items: list[dict[str, Any]] = [dict(item) for item in attachment.items] if attachment else []
    if isinstance(text := message.get("content"), str) and text:
        items.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})
    for call in message.get("tool_calls") or ():
        function = call["function"]
        items.append(
            {
                "type": "function_call",
                "call_id": call["id"],
                "name": function["name"],
                "arguments": function["arguments"],
            }
        )
    if items and all(item.get("type") == "reasoning" for item in items):
        return []  # reasoning alone, with nothing it led to, is not taken back
    return items


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    function = tool.get("function") or {}
    out = {"type": "function", "name": function.get("name"), "parameters": function.get("parameters") or {}}
    return out | ({"description": function["description"]} if function.get("description") else {})
