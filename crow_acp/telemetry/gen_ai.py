"""The spans of a turn, as the OpenTelemetry GenAI and MCP conventions name them:

    invoke_agent {agent}      one prompt's turn (a MultiAgent's run; its members' turns are children)
      chat {model}            one model call: gen_ai.request.model, gen_ai.usage.*, finish reasons
      execute_tool {tool}     one tool call: gen_ai.tool.name, gen_ai.tool.call.id
        permission {tool}     the wait for the user's answer
        tools/call {tool}     the MCP request (kind client)
      compaction              a compaction, from its start to its end report

Prompts, replies, tool arguments and results are recorded only with [telemetry] record_content, and
every recorded text is redacted of keys first (util/secrets.py) and cut to MAX_CONTENT characters.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from ..events import Usage
from ..util.secrets import redact
from . import spans
from .spans import Ended, Span, Value

MAX_CONTENT = 8_000
_compactions: dict[str, Ended] = {}
MAX_OPEN_COMPACTIONS = 64


def content(value: Any) -> str:
    """Recorded text: JSON for anything but a string, keys redacted before the cut."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return redact(text)[:MAX_CONTENT]


def provider(api: str | None) -> str:
    """gen_ai.provider.name: the wire's vendor (an OpenAI-compatible server speaks openai's)."""
    return "anthropic" if api == "anthropic" else "openai"


@contextmanager
def invoke_agent(agent: str, session_id: str, prompt: str | None) -> Iterator[Span]:
    """One turn; the session is also the log lines' context meanwhile."""
    attributes: dict[str, Value] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent,
        "gen_ai.conversation.id": session_id,
    }
    if spans.record_content and prompt is not None:
        part = {"type": "text", "content": prompt}
        attributes["gen_ai.input.messages"] = content([{"role": "user", "parts": [part]}])
    token = spans.SESSION.set(session_id)
    try:
        with spans.span(f"invoke_agent {agent}", attributes) as span:
            yield span
    finally:
        spans.SESSION.reset(token)


def chat(model: str, provider_name: str) -> AbstractContextManager[Span]:
    attributes: dict[str, Value] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider_name,
        "gen_ai.request.model": model,
    }
    return spans.span(f"chat {model}", attributes, "client")


def replied(span: Span, usage: Usage | None, finish_reason: str | None, text: list[str]) -> None:
    """A model call's outcome on its chat span."""
    if usage is not None:
        span.set("gen_ai.usage.input_tokens", usage.prompt_tokens)
        span.set("gen_ai.usage.output_tokens", usage.completion_tokens)
        span.set("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens)
        span.set("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens)
    if finish_reason:
        span.set("gen_ai.response.finish_reasons", [finish_reason])
    if spans.record_content and text:
        part = {"type": "text", "content": "".join(text)}
        span.set("gen_ai.output.messages", content([{"role": "assistant", "parts": [part]}]))


def execute_tool(name: str, call_id: str, arguments: Any) -> AbstractContextManager[Span]:
    attributes: dict[str, Value] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.type": "function",
    }
    if spans.record_content:
        attributes["gen_ai.tool.call.arguments"] = content(arguments)
    return spans.span(f"execute_tool {name}", attributes)


def tool_done(span: Span, text: str, is_error: bool) -> None:
    if is_error:
        span.fail("tool_error")
    if spans.record_content:
        span.set("gen_ai.tool.call.result", content(text))


def permission(tool: str, call_id: str) -> AbstractContextManager[Span]:
    return spans.span(f"permission {tool}", {"gen_ai.tool.name": tool, "gen_ai.tool.call.id": call_id})


def mcp_call(server: str, tool: str) -> AbstractContextManager[Span]:
    attributes: dict[str, Value] = {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": tool,
        "gen_ai.operation.name": "execute_tool",
        "crow.mcp.server": server,
    }
    return spans.span(f"tools/call {tool}", attributes, "client")


def compaction(compaction_id: str, status: str) -> None:
    """A compaction's report: in_progress opens its span, any other status ends it."""
    if not spans.tracing():
        return
    if status == "in_progress":
        if compaction_id not in _compactions and len(_compactions) < MAX_OPEN_COMPACTIONS:
            _compactions[compaction_id] = spans.start("compaction", {"crow.compaction.id": compaction_id})
        return
    if (span := _compactions.pop(compaction_id, None)) is not None:
        if status != "completed":
            span.fail(status)
        span.end()
