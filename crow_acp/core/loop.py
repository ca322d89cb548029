"""The streaming ReAct loop: hooks, model stream, tool calls, repeat.

    pre_request → steered messages recorded → stream the reply (text, reasoning, tool calls) → record it
      → post_response
      → no tool calls: end_turn (or max_tokens), unless a steered message waits: next step
      → tool calls: pending → before_tool steps (guards, then permission) → in_progress → call
        (concurrently) → after_tool → completed/failed
        → results recorded → next step (at most max_steps, then max_turn_requests)

Cancellation is the caller's cancel scope; a steered message cuts the streaming reply off with a scope of
its own (core/steering.py). Whatever happens, the history stays valid: every
recorded tool call gets a result, and the partial reply that was shown is what is recorded.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import anyio
from pydantic import BaseModel

from ..events import (
    ModelCallFinished,
    TextDelta,
    ThoughtDelta,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
    ToolResult,
    ToolStatus,
    ToolView,
    Usage,
)
from ..history import ATTACHMENTS, EntryMeta, ToolDisplay
from ..model.client import AttachmentChunk, Finish, ReasoningChunk, TextChunk, ToolCallChunk
from ..model.costs import charge
from ..plugin.decisions import ToolCallInfo
from ..plugin.session import Tool, ToolContext, ToolTimer
from ..telemetry import gen_ai, spans
from . import images
from .cut_turn import crow_stopping
from .history_rules import object_arguments
from .hooks import run_hooks
from .request import RequestChain
from .session import INTERRUPTED, Session
from .session_view import SessionView
from .tool_gate import after_tool, before_tool, placeholder
from .turn import (
    MAX_NAME,
    Draft,
    PendingCall,
    Reply,
    ReplyBudget,
    Turn,
    check_new_calls,
    close_stream,
    new_call_id,
    over_cap,
)

log = logging.getLogger(__name__)

CANCELLED = "Cancelled by the user."


async def run_turn(turn: Turn) -> str:
    """Run the loop for the user message already recorded; returns the ACP stop reason."""
    session = turn.session
    steering = session.control.steering
    with steering.open():
        for step in range(turn.max_steps):
            await run_hooks(turn.callbacks.pre_request, turn.access, "pre_request", step=step)
            reply = await (
                traced_reply(turn) if spans.on else stream_reply(session, turn.request, ReplyBudget.of(turn.limits))
            )
            await run_hooks(
                turn.callbacks.post_response,
                turn.access,
                "post_response",
                response=reply.message,
                usage=reply.usage,
                finish_reason=reply.finish_reason,
                step=step,
            )
            if reply.calls:
                await run_tools(turn, reply.calls)
            elif not steering.waiting:  # decided with no await before the inbox closes: nothing offered is lost
                return "max_tokens" if reply.finish_reason == "length" else "end_turn"
    return "max_turn_requests"


async def traced_reply(turn: Turn) -> Reply:
    """stream_reply in its chat span (tracing on: run_turn checks before it calls in here)."""
    profile = turn.session.model.profile
    with gen_ai.chat(profile.model, gen_ai.provider(profile.api)) as span:
        reply = await stream_reply(turn.session, turn.request, ReplyBudget.of(turn.limits))
        gen_ai.replied(span, reply.usage, reply.finish_reason, reply.text_parts)
    return reply


async def stream_reply(session: Session, chain: RequestChain, budget: ReplyBudget) -> Reply:
    """Stream one model reply to the observers as it arrives, and record it (also when cut short)."""
    reply, message_id = Reply(), uuid.uuid4().hex
    draft = Draft(session, message_id)
    calls: dict[int, PendingCall] = {}
    await session.mcp.settle()  # a tool list that changed during the last tool call
    steering = session.control.steering
    try:
        steering.deliver(session)  # the model-call boundary: steered messages join the history here
        request = chain.build(session)
        stream = session.model.stream(request.messages, request.tools, reasoning_effort=request.reasoning_effort)
        with anyio.CancelScope() as cut, steering.cutting(cut.cancel):
            try:
                async for delta in stream:
                    await _take(session, delta, reply, calls, budget, draft, message_id)
                    if budget.cut:
                        break
            finally:
                with anyio.CancelScope(shield=True):
                    await close_stream(stream)
        if cut.cancelled_caught:  # a steering message arrived: what was shown is kept, marked as cut
            reply.cut = "steered"
            calls.clear()
        if budget.cut:  # what was shown is kept, with a note for the model and the user
            log.warning("cut a model reply: it passed %s", budget.cut)
            reply.text_parts.append(budget.note())
            reply.finish_reason = "length"
            await session.emit(TextDelta(session.id, message_id, budget.note()))
            calls.clear()
        # Only a finished stream's tool calls are recorded: a cut one has no complete calls to answer.
        reply.calls = list(calls.values())
        for call in reply.calls:
            call.complete()
        check_new_calls(reply.calls, session.messages(), new_call_id)
    except BaseException:
        if crow_stopping():  # shut down mid-stream: kept as shown, and marked cut for the next load
            reply.cut = "streaming"
        raise
    finally:
        reply.message = _record_reply(reply, draft)
    if reply.usage:
        session.last_usage = reply.usage
        profile, cost = session.model.profile, charge(session, reply.usage)
        window, model = profile.context_window, profile.model
        await session.emit(ModelCallFinished(session.id, reply.usage, reply.finish_reason, window, cost, model))
    return reply


async def _take(
    session: Session,
    delta: Any,
    reply: Reply,
    calls: dict[int, PendingCall],
    budget: ReplyBudget,
    draft: Draft,
    message_id: str,
) -> None:
    """One delta of the stream into the reply. Text is kept once it was shown: a cancel or a shutdown
    during the emit leaves it out of the reply, so what is recorded is what the editor got."""
    match delta:
        case TextChunk(text):
            if text := budget.take(text):
                await session.emit(TextDelta(session.id, message_id, text))
                reply.text_parts.append(text)
                draft.keep(reply.text_parts, reply.reasoning_parts)
        case ReasoningChunk(text):
            if text := budget.take(text):
                await session.emit(ThoughtDelta(session.id, message_id, text))
                reply.reasoning_parts.append(text)
                draft.keep(reply.text_parts, reply.reasoning_parts)
        case ToolCallChunk(index, call_id, name, arguments):
            if index in calls or budget.new_call(len(calls) + 1):
                call = calls.setdefault(index, PendingCall(id=call_id or new_call_id()))
                call.name = (call.name + budget.take(name or ""))[:MAX_NAME]  # bounded: no quadratic +=
                call.fragments.append(budget.take(arguments))
        case AttachmentChunk(attachment):
            reply.attachments.append(attachment)
        case Usage():
            reply.usage = delta
        case Finish(reason):
            reply.finish_reason = reason


def _record_reply(reply: Reply, draft: Draft) -> dict[str, Any] | None:
    text, reasoning = "".join(reply.text_parts), "".join(reply.reasoning_parts)
    if not (text or reply.calls or reasoning):
        return None
    # content may be null only beside tool_calls: strict servers reject a bare null (reasoning-only replies).
    message: dict[str, Any] = {"role": "assistant", "content": text or (None if reply.calls else "")}
    if reply.calls:
        message["tool_calls"] = [
            # the valid form for the model; the raw text stays in the result's display for the editor
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": object_arguments(c.arguments or "{}")},
            }
            for c in reply.calls
        ]
    if reply.attachments:  # the provider's own parts, sent back to it (and only to it) on later calls
        message[ATTACHMENTS] = [attachment.to_json() for attachment in reply.attachments]
    draft.settle(message, reasoning or None, reply.cut)
    return message


async def run_tools(turn: Turn, calls: list[PendingCall]) -> None:
    """Run one reply's tool calls concurrently; every call gets a recorded result, even on cancel."""
    session, done = turn.session, set[str]()
    tools = {tool.name: tool for tool in session.tools()}
    allowed = turn.limits.tool_calls_per_reply
    slots = anyio.Semaphore(turn.limits.parallel_tool_calls)  # the others stay pending until a slot frees
    try:
        for call in calls:
            call.view = tools[call.name].view(call.args or {}) if call.name in tools else ToolView(call.name)
            await session.emit(ToolCallStarted(session.id, call.id, call.name, call.shown_args, call.view))
        for call in calls[allowed:]:
            await _finish(session, call, over_cap(turn.limits, len(calls)), done)
        async with anyio.create_task_group() as group:
            for call in calls[:allowed]:
                group.start_soon(_run_call, turn, call, tools.get(call.name), done, slots)
    finally:
        with anyio.CancelScope(shield=True):
            for call in calls:
                if call.id not in done:
                    stopped = INTERRUPTED if crow_stopping() else CANCELLED  # a shutdown's cut, or the user's
                    await _finish(session, call, ToolResult(stopped, is_error=True), done)
            images.record_tool_images(session, [(call.name, call.images) for call in calls if call.images])


async def _run_call(turn: Turn, call: PendingCall, tool: Tool | None, done: set[str], slots: anyio.Semaphore) -> None:
    access = SessionView(turn.session)
    async with slots:
        if spans.on:
            with gen_ai.execute_tool(call.name, call.id, call.shown_args) as span:
                result = await _call(turn, call, tool, access)
                gen_ai.tool_done(span, result.text, result.is_error)
        else:
            result = await _call(turn, call, tool, access)
        await _finish(turn.session, call, result, done)


async def _call(turn: Turn, call: PendingCall, tool: Tool | None, access: SessionView) -> ToolResult:
    """The call's result, after_tool hooks applied."""
    info, ran = placeholder(call), False
    try:
        info, result, ran = await _outcome(turn, call, tool, access)
    except Exception as exc:  # a tool is others' code: its crash fails this call, not the turn
        log.exception("tool %s failed", call.name)
        result = ToolResult(f"Tool error: {type(exc).__name__}: {exc}", is_error=True)
    return await after_tool(turn, access, info, result, ran)


async def _outcome(
    turn: Turn, call: PendingCall, tool: Tool | None, access: SessionView
) -> tuple[ToolCallInfo, ToolResult, bool]:
    """(the call as finally decided, its result, whether the tool ran)."""
    session = turn.session
    if call.args is None:
        return placeholder(call), ToolResult(f"Invalid tool arguments: {call.problem}", is_error=True), False
    if tool is None:
        names = ", ".join(t.name for t in session.tools()) or "none"
        text = session.mcp.unavailable(call.name) or f"Unknown tool {call.name!r}. Available: {names}"
        return placeholder(call), ToolResult(text, is_error=True), False
    context = ToolContext(access, call.id, session.client, session.client_capabilities)
    gate = await before_tool(turn, call, tool, context)
    if gate.result is not None:
        return gate.call, gate.result, False
    context.write_targets = call.write_targets
    context.sandbox = call.sandbox
    await session.emit(ToolCallRunning(session.id, call.id))
    limit = tool.timeout or turn.tool_timeout  # a tool with its own limit says so
    with anyio.move_on_after(limit) as timer:
        context.timer = ToolTimer(timer)  # paused while the user answers a question of the call's
        result = await tool.call(gate.call.arguments, context)
    if timer.cancelled_caught:
        result = ToolResult(f"The tool timed out after {limit:g} s.", is_error=True)
    return gate.call, result, True


async def _finish(session: Session, call: PendingCall, result: ToolResult, done: set[str]) -> None:
    done.add(call.id)
    call.images = result.images
    status: ToolStatus = "failed" if result.is_error else "completed"
    view = call.view or ToolView(call.name)
    content = [_jsonable(item) for item in result.content] if result.content else None
    display = ToolDisplay(call.name, view.title, view.kind, status, list(view.locations), call.shown_args, content)
    session.record({"role": "tool", "tool_call_id": call.id, "content": result.text}, EntryMeta(tool=display))
    await session.emit(ToolCallFinished(session.id, call.id, call.name, result, status))


def _jsonable(item: Any) -> Any:
    return item.model_dump(mode="json", by_alias=True, exclude_none=True) if isinstance(item, BaseModel) else item
