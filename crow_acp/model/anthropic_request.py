"""A strict chat history as an Anthropic Messages request: system, alternating turns, cache breakpoints.

    system messages        -> `system` text blocks (a later one: a user text block, where it was)
    user text and images   -> text and image blocks (a data: URL as base64, an http one as a url source)
    assistant              -> its own wire's thinking blocks first (signatures unchanged), text, tool_use
    tool results           -> tool_result blocks, in the user turn that follows the calls
    consecutive turns of one role are merged: the API wants user and assistant to alternate

Caching: at most four `cache_control` breakpoints (the API refuses a fifth): the last tool, the end of
the system prompt, the end of the previous request's conversation, and the end of this one. So each call
reads what the last one wrote, and writes the new end for the next.
"""

from __future__ import annotations

import json
from typing import Any

from ..config import ModelProfile
from ..history import attachment_for

WIRE = "anthropic"
DEFAULT_MAX_TOKENS = 32_000
DEFAULT_BUDGET = 16_000
LEVEL_SHARE = {"low": 0.25, "medium": 0.5, "high": 1.0}
"""The share of the high level's thinking budget each thinking level gets."""
MIN_BUDGET = 1024


def messages_body(
    profile: ModelProfile, messages: list[dict[str, Any]], tools: list[dict[str, Any]], effort: str | None
) -> dict[str, Any]:
    """The whole request body (without `stream`)."""
    system, turns = _turns(messages, profile.model)
    max_tokens = profile.max_tokens or DEFAULT_MAX_TOKENS
    body: dict[str, Any] = {"model": profile.model, "max_tokens": max_tokens, "messages": turns}
    if system:
        body["system"] = system
    if tools:
        body["tools"] = [_tool(tool) for tool in tools]
    thinking = _thinking(profile, effort, max_tokens)
    if thinking is not None and _thinking_allowed(turns):
        body["thinking"] = thinking
    elif profile.temperature is not None:  # with thinking on, the API takes no temperature
        body["temperature"] = profile.temperature
    _mark_breakpoints(body, {"type": "ephemeral", **({"ttl": "1h"} if profile.cache_ttl == "1h" else {})})
    return body


def _thinking(profile: ModelProfile, effort: str | None, max_tokens: int) -> dict[str, Any] | None:
    effort = effort or profile.reasoning_effort
    if not profile.reasoning or effort not in LEVEL_SHARE:
        return None
    budget = int((profile.thinking_budget or DEFAULT_BUDGET) * LEVEL_SHARE[effort])
    budget = min(max(budget, MIN_BUDGET), max_tokens - 1)  # the API wants budget < max_tokens
    return {"type": "enabled", "budget_tokens": budget} if budget >= MIN_BUDGET else None


def _thinking_allowed(turns: list[dict[str, Any]]) -> bool:
    """With thinking on, an assistant turn of the running tool loop must start with its thinking: after a
    switch from another wire mid-loop it has none, so that request goes without thinking."""
    for turn in reversed(turns):
        blocks = turn["content"]
        if turn["role"] == "user" and not all(block["type"] == "tool_result" for block in blocks[:1]):
            return True  # the loop began with this prompt
        if turn["role"] == "assistant" and any(block["type"] == "tool_use" for block in blocks):
            if blocks[0]["type"] not in ("thinking", "redacted_thinking"):
                return False
    return True


def _turns(messages: list[dict[str, Any]], model: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "system" and not turns:
            system += [block for block in _user_blocks(message.get("content")) if block["type"] == "text"]
            continue
        if role == "assistant":
            blocks, turn_role = _assistant_blocks(message, model), "assistant"
        elif role == "tool":
            blocks, turn_role = [_tool_result(message)], "user"
        else:
            blocks, turn_role = _user_blocks(message.get("content")), "user"
        if not blocks:
            continue
        if turns and turns[-1]["role"] == turn_role:
            turns[-1]["content"] += blocks
        else:
            turns.append({"role": turn_role, "content": blocks})
    if not turns or turns[0]["role"] != "user":  # the API wants a user turn first
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": "(continued)"}]})
    for turn in turns:  # tool results first in a user turn, as the API demands
        turn["content"].sort(key=lambda block: block["type"] != "tool_result")
    return system, turns


def _user_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text" and isinstance(part.get("text"), str) and part["text"]:
            blocks.append({"type": "text", "text": part["text"]})
        elif part.get("type") == "image_url" and (image := _image(part.get("image_url"))):
            blocks.append(image)
    return blocks


def _image(image_url: Any) -> dict[str, Any] | None:
    url = image_url.get("url") if isinstance(image_url, dict) else None
    if not isinstance(url, str):
        return None
    if url.startswith("data:") and ";base64," in url:
        mime, _, data = url[5:].partition(";base64,")
        return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}}
    if url.startswith(("http://", "https://")):
        return {"type": "image", "source": {"type": "url", "url": url}}
    return None


def _assistant_blocks(message: dict[str, Any], model: str) -> list[dict[str, Any]]:
    attachment = attachment_for(message, WIRE, model)  # another model's signatures would be refused
    blocks: list[dict[str, Any]] = [dict(item) for item in attachment.items] if attachment else []
    if isinstance(text := message.get("content"), str) and text.strip():
        blocks.append({"type": "text", "text": text})
    for call in message.get("tool_calls") or ():
        function = call["function"]
        arguments = json.loads(function["arguments"])  # strict_messages made them a JSON object
        blocks.append({"type": "tool_use", "id": call["id"], "name": function["name"], "input": arguments})
    if blocks and all(block["type"] in ("thinking", "redacted_thinking") for block in blocks):
        return []  # thinking alone is no turn the API takes back
    return blocks


def _tool_result(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    text = content if isinstance(content, str) else json.dumps(content)
    return {"type": "tool_result", "tool_use_id": str(message.get("tool_call_id")), "content": text or "(empty)"}


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    function = tool.get("function") or {}
    out = {"name": function.get("name"), "input_schema": function.get("parameters") or {"type": "object"}}
    return out | ({"description": function["description"]} if function.get("description") else {})


def _mark_breakpoints(body: dict[str, Any], control: dict[str, Any]) -> None:
    """Tools, system, the previous request's end (the user turn before the last reply) and this end."""
    marks: list[dict[str, Any]] = []
    if body.get("tools"):
        marks.append(body["tools"][-1])
    if body.get("system"):
        marks.append(body["system"][-1])
    users = [turn for turn in body["messages"] if turn["role"] == "user"]
    ends = [users[-2]] if len(users) > 1 else []
    for turn in [*ends, body["messages"][-1]]:
        cacheable = [block for block in turn["content"] if block["type"] not in ("thinking", "redacted_thinking")]
        if cacheable and all(cacheable[-1] is not mark for mark in marks):
            marks.append(cacheable[-1])
    for block in marks[-4:]:
        block["cache_control"] = dict(control)
