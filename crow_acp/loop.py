"""The streaming ReAct loop: hooks, model stream, tool calls, repeat.

    pre_request → stream the reply (text, reasoning, tool calls) → record it → post_response
      → no tool calls: end_turn (or max_tokens)
      → tool calls: pending → permission → in_progress → call (concurrently) → completed/failed
        → results recorded → next step (at most max_steps, then max_turn_requests)

Cancellation is the caller's cancel scope. Whatever happens, the history stays valid: every
recorded tool call gets a result, and the partial reply that was shown is what is recorded.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import anyio

from .events import (
    ModelCallFinished,
    TextDelta,
    ThoughtDelta,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
    ToolResult,
    ToolView,
    Usage,
)
from .hooks import CrowCallbacks, run_hooks
from .llm import Finish, ReasoningChunk, TextChunk, ToolCallChunk
from .session import Session, SessionAccess
from .tools import Tool, ToolContext, openai_schema

CANCELLED = "Cancelled by the user."
PermissionGate = Callable[[Session, "PendingCall", Tool, ToolResult | None], Awaitable[str | None]]
"""Given the call and its preview (what it would do), returns None to allow it, or why it may not run."""


@dataclass
class PendingCall:
    id: str
    name: str = ""
    arguments: str = ""
    view: ToolView | None = None

    def parsed(self) -> dict[str, Any]:
        """The arguments as a JSON object; ValueError says what is wrong with them."""
        value = json.loads(self.arguments or "{}")
        if not isinstance(value, dict):
            raise ValueError(f"expected a JSON object, got {type(value).__name__}")
        return value


@dataclass
class Reply:
    text: str = ""
    reasoning: str = ""
    calls: list[PendingCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage | None = None


@dataclass
class Turn:
    session: Session
    callbacks: CrowCallbacks
    permit: PermissionGate
    max_steps: int
    tool_timeout: float

    @property
    def access(self) -> SessionAccess:
        return SessionAccess(self.session)


async def run_turn(turn: Turn) -> str:
    """Run the loop for the user message already recorded; returns the ACP stop reason."""
    session = turn.session
    for step in range(turn.max_steps):
        await run_hooks(turn.callbacks.pre_request, turn.access, step=step)
        reply = await stream_reply(session)
        await run_hooks(
            turn.callbacks.post_response,
            turn.access,
            response=session.history[-1].message,
            usage=reply.usage,
            finish_reason=reply.finish_reason,
            step=step,
        )
        if not reply.calls:
            return "max_tokens" if reply.finish_reason == "length" else "end_turn"
        await run_tools(turn, reply.calls)
    return "max_turn_requests"


async def stream_reply(session: Session) -> Reply:
    """Stream one model reply to the observers as it arrives, and record it (also when cut short)."""
    reply, calls, message_id = Reply(), {}, uuid.uuid4().hex
    tools = [openai_schema(tool) for tool in session.tools()]
    try:
        async for delta in session.model.stream(session.messages(), tools):
            match delta:
                case TextChunk(text):
                    reply.text += text
                    await session.emit(TextDelta(session.id, message_id, text))
                case ReasoningChunk(text):
                    reply.reasoning += text
                    await session.emit(ThoughtDelta(session.id, message_id, text))
                case ToolCallChunk(index, call_id, name, arguments):
                    call = calls.setdefault(index, PendingCall(id=call_id or f"call_{uuid.uuid4().hex[:12]}"))
                    call.name += name or ""
                    call.arguments += arguments
                case Usage():
                    reply.usage = delta
                case Finish(reason):
                    reply.finish_reason = reason
        # Only a finished stream's tool calls are recorded: a cut one has no complete calls to answer.
        reply.calls = list(calls.values())
    finally:
        _record_reply(session, reply, message_id)
    if reply.usage:
        session.last_usage = reply.usage
        window = session.model.profile.context_window
        await session.emit(ModelCallFinished(session.id, reply.usage, reply.finish_reason, window))
    return reply


def _record_reply(session: Session, reply: Reply, message_id: str) -> None:
    # content may be null only beside tool_calls: strict servers reject a bare null (reasoning-only replies).
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or (None if reply.calls else "")}
    if reply.calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments or "{}"}}
            for c in reply.calls
        ]
    if reply.text or reply.calls or reply.reasoning:
        session.record(message, message_id=message_id, reasoning=reply.reasoning or None)


async def run_tools(turn: Turn, calls: list[PendingCall]) -> None:
    """Run one reply's tool calls concurrently; every call gets a recorded result, even on cancel."""
    session, done = turn.session, set[str]()
    tools = {tool.name: tool for tool in session.tools()}
    try:
        for call in calls:
            call.view = tools[call.name].view(_safe_args(call)) if call.name in tools else ToolView(call.name)
            await session.emit(ToolCallStarted(session.id, call.id, call.name, _safe_args(call), call.view))
        async with anyio.create_task_group() as group:
            for call in calls:
                group.start_soon(_run_call, turn, call, tools.get(call.name), done)
    finally:
        with anyio.CancelScope(shield=True):
            for call in calls:
                if call.id not in done:
                    await _finish(session, call, ToolResult(CANCELLED, is_error=True), done)


async def _run_call(turn: Turn, call: PendingCall, tool: Tool | None, done: set[str]) -> None:
    session = turn.session
    try:
        arguments = call.parsed()
    except ValueError as exc:
        return await _finish(session, call, ToolResult(f"Invalid tool arguments: {exc}", is_error=True), done)
    if tool is None:
        names = ", ".join(t.name for t in session.tools()) or "none"
        return await _finish(session, call, ToolResult(f"Unknown tool {call.name!r}. Available: {names}", True), done)
    context = ToolContext(SessionAccess(session), call.id, session.client, session.client_capabilities)
    preview = await tool.preview(arguments, context) if hasattr(tool, "preview") else None
    if preview and preview.is_error:  # it cannot work (say, a path outside the workspace): no need to ask
        return await _finish(session, call, preview, done)
    if refusal := await turn.permit(session, call, tool, preview):
        return await _finish(session, call, ToolResult(refusal, is_error=True), done)
    await session.emit(ToolCallRunning(session.id, call.id))
    limit = getattr(tool, "timeout", None) or turn.tool_timeout  # a tool with its own limit says so
    with anyio.move_on_after(limit) as timer:
        result = await tool.call(arguments, context)
    if timer.cancelled_caught:
        result = ToolResult(f"The tool timed out after {limit:g} s.", is_error=True)
    await _finish(session, call, result, done)


async def _finish(session: Session, call: PendingCall, result: ToolResult, done: set[str]) -> None:
    done.add(call.id)
    status = "failed" if result.is_error else "completed"
    view = call.view or ToolView(call.name)
    display = {"title": view.title, "kind": view.kind, "locations": list(view.locations), "status": status}
    content = [_jsonable(item) for item in result.content] if result.content else None
    raw_input = _safe_args(call)
    session.record(
        {"role": "tool", "tool_call_id": call.id, "content": result.text},
        tool={**display, "name": call.name, "raw_input": raw_input, "content": content},
    )
    await session.emit(ToolCallFinished(session.id, call.id, call.name, result, status))


def answer_open_calls(session: Session, text: str) -> None:
    """Record `text` as the result of the last reply's unanswered tool calls, so the model accepts the history.

    A turn cancelled between recording a reply and running its tools (or a killed process) leaves
    such calls. Results are recorded as each call finishes, so a gap can only be at the very end.
    """
    entries, tail = session.history, 0
    while tail < len(entries) and entries[-1 - tail].message["role"] == "tool":
        tail += 1
    if tail == len(entries) or not (calls := entries[-1 - tail].message.get("tool_calls")):
        return
    answered = {entry.message.get("tool_call_id") for entry in entries[len(entries) - tail :]}
    for call in calls:
        if call["id"] not in answered:
            name = call["function"]["name"]
            session.record(
                {"role": "tool", "tool_call_id": call["id"], "content": text},
                tool={"name": name, "title": name, "status": "failed"},
            )


def _jsonable(item: Any) -> Any:
    return item.model_dump(mode="json", by_alias=True, exclude_none=True) if hasattr(item, "model_dump") else item


def _safe_args(call: PendingCall) -> dict[str, Any]:
    try:
        return call.parsed()
    except ValueError:
        return {"_raw": call.arguments}
