"""Loop events and stored history as ACP session/update notifications.

The SDK's update shapes for loop events and stored history: the live stream is one observer
(AcpUpdates), and session/load replay (replay_updates) uses the same builders. The other shapes of
this room have a module each (notices.py, plans.py); the newer models are declared in rpc/shapes/, and
rpc/door.py writes text chunks past the SDK.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from acp import plan_entry, start_tool_call, text_block, tool_content, update_plan, update_tool_call
from acp.helpers import update_available_commands
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AvailableCommand,
    AvailableCommandInput,
    SessionInfoUpdate,
    ToolCallLocation,
    UnstructuredCommandInput,
    UsageUpdate,
    UserMessageChunk,
)
from acp.schema import (
    Cost as AcpCost,
)

from ...api import SlashCommand
from ...core.session import SUMMARY_PREFIX
from ...events import (
    ActivityReported,
    CommandsChanged,
    CompactionReported,
    Cost,
    ErrorOccurred,
    Event,
    ModelCallFinished,
    NoticeRaised,
    PlanRemoved,
    PlanUpdated,
    TextDelta,
    ThoughtDelta,
    TitleChanged,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
    ToolCallUpdated,
    ToolCallWaiting,
    TurnFinished,
    UsageChanged,
)
from ...history import EntryMeta, StoredMessage, ToolDisplay
from ..rpc.door import StreamedKind, StreamedText, channel_of, send_update
from ..rpc.shapes import ClientFeatures
from ..rpc.shapes.updates import named, plan_operation
from .editor_link import EditorLink
from .notices import compaction_activity, compaction_updates, notice, replayed_compaction
from .plans import LastPlans, plan_shown
from .replay import replayed_blocks

NO_FEATURES = ClientFeatures()
log = logging.getLogger(__name__)


class AcpUpdates:
    """The observer that streams events to the editor, in order, as they happen."""

    def __init__(self, editor: EditorLink) -> None:
        self.editor = editor
        self.activities: set[str] = set()

    @property
    def conn(self) -> Any:
        return self.editor.conn

    async def __call__(self, event: Event) -> None:
        try:
            await self._send(event)
        except ConnectionError:  # the SDK's word for an editor that went away (Ctrl-C, SIGTERM): nobody to tell
            log.debug("the editor is gone; %s not sent", type(event).__name__)

    async def _send(self, event: Event) -> None:
        if isinstance(event, TextDelta | ThoughtDelta) and (channel := channel_of(self.conn)) is not None:
            kind: StreamedKind = "agent_message_chunk" if isinstance(event, TextDelta) else "agent_thought_chunk"
            await channel.send(event.session_id, StreamedText(kind, event.text, event.message_id))
            return  # a streamed reply's chunks: no pydantic round trip (rpc/door.py)
        if isinstance(event, NoticeRaised | CompactionReported):
            await self._send_newer(event)
            return
        update = event_update(event)
        if isinstance(event, PlanUpdated | PlanRemoved) and self.editor.features.plan:
            update = plan_operation(event)
        if isinstance(event, ActivityReported):
            # The first report of an activity starts a tool call; later ones update it.
            if event.activity_id in self.activities:
                update = update_tool_call(
                    event.activity_id, status=event.status, title=event.title, content=update.content
                )
            self.activities.add(event.activity_id)
        if update is not None:
            await send_update(self.conn, event.session_id, update)

    async def _send_newer(self, event: NoticeRaised | CompactionReported) -> None:
        """A notice or compaction: the newer updates to a client that opted in, else the older view."""
        features = self.editor.features
        if isinstance(event, NoticeRaised):
            if features.notices:
                await send_update(self.conn, event.session_id, notice(event))
            elif event.instead is not None:
                await self._send(event.instead)
        elif features.compaction:
            for update in compaction_updates(event):
                await send_update(self.conn, event.session_id, update)
        else:
            await self._send(compaction_activity(event))


def event_update(event: Event) -> Any:
    match event:
        case TextDelta(_, message_id, text):
            return AgentMessageChunk(
                session_update="agent_message_chunk", content=text_block(text), message_id=message_id
            )
        case ThoughtDelta(_, message_id, text):
            return AgentThoughtChunk(
                session_update="agent_thought_chunk", content=text_block(text), message_id=message_id
            )
        case ToolCallStarted(_, call_id, name, arguments, view):
            started = start_tool_call(
                call_id,
                view.title,
                kind=view.kind,
                status="pending",
                raw_input=arguments,
                locations=_locations(view.locations),
            )
            return named(started, name)
        case ToolCallRunning(_, call_id):
            return update_tool_call(call_id, status="in_progress")
        case ToolCallFinished(_, call_id, name, result, status):
            content = result.content or [tool_content(text_block(result.text))]
            return named(update_tool_call(call_id, status=status, content=content, raw_output=result.raw_output), name)
        case ModelCallFinished(_, usage, _, window, cost):
            return UsageUpdate(session_update="usage_update", used=usage.total_tokens, size=window, cost=_cost(cost))
        case UsageChanged(_, used, window, cost):
            return UsageUpdate(session_update="usage_update", used=used, size=window, cost=_cost(cost))
        case ActivityReported(_, activity_id, title, status, kind, text):
            shown = [tool_content(text_block(text))] if text else None
            return start_tool_call(activity_id, title, kind=kind, status=status, content=shown)
        case ToolCallUpdated(_, call_id, content):
            return update_tool_call(call_id, content=content)
        case ToolCallWaiting(_, call_id, question):
            return _waiting(call_id, question)
        case TitleChanged(_, title):
            return SessionInfoUpdate(session_update="session_info_update", title=title)
        case CommandsChanged(_, commands):
            return commands_update(list(commands))
        case PlanUpdated(_, entries, _, markdown):
            if markdown is not None:
                return None  # a legacy `plan` is a checklist: the Markdown stays in the tool call
            return update_plan([plan_entry(e.content, priority=e.priority, status=e.status) for e in entries])
        case PlanRemoved():
            return update_plan([])  # how a legacy editor's plan is cleared
        case ErrorOccurred() | TurnFinished():
            return None  # for user observers; the editor gets errors as the prompt's JSON-RPC error
    return None


def _cost(cost: Cost | None) -> AcpCost | None:
    return AcpCost(amount=cost.amount, currency=cost.currency) if cost else None


def _locations(paths: tuple[str, ...] | list[str]) -> list[ToolCallLocation] | None:
    return [ToolCallLocation(path=path) for path in paths] or None


def commands_update(commands: list[SlashCommand]) -> Any:
    return update_available_commands(
        [
            AvailableCommand(
                name=command.name,
                description=command.description,
                input=AvailableCommandInput(UnstructuredCommandInput(hint=command.hint)) if command.hint else None,
            )
            for command in commands
        ]
    )


def replay_with_plans(entries: list[StoredMessage], features: ClientFeatures = NO_FEATURES) -> Iterator[Any]:
    """The replay of a session/load: the history, then (with plan operations) the last state of each plan."""
    plans = LastPlans() if features.plan else None
    yield from replay_updates(entries, features, plans)
    yield from plans.updates() if plans is not None else ()


def replay_updates(
    entries: list[StoredMessage], features: ClientFeatures = NO_FEATURES, plans: LastPlans | None = None
) -> Iterator[Any]:
    """What the user saw, rebuilt from the store: archived history, compactions, then the rest.
    A legacy editor's plan panel is shown as it was at each plan call; with `plans` (an editor with plan
    operations) the plan calls are recorded there, for the caller to send their last state after."""
    called: dict[str, str] = {}  # call id -> the tool's name as the model called it
    for entry in entries:
        message, meta = entry.message, entry.meta
        called.update(_called_names(message))
        if not meta.replayed:
            continue
        if meta.kind == "summary":
            yield replayed_compaction(entry, _text(message.get("content")).removeprefix(SUMMARY_PREFIX), features)
            continue
        match message["role"]:
            case "user":
                yield from _user_chunks(message, meta)
            case "assistant":
                yield from _assistant_chunks(message, meta)
            case "tool":
                tool = meta.tool or ToolDisplay("tool")
                name = called.get(message["tool_call_id"]) or (meta.tool.name if meta.tool else None)
                yield from _tool_updates(message, tool, name)
                if (plan := plan_shown(tool)) is None:
                    continue
                if plans is not None:
                    plans.record(plan)
                elif (update := event_update(plan)) is not None:
                    yield update  # the plan panel as it was then


def _user_chunks(message: dict, meta: EntryMeta) -> Iterator[Any]:
    blocks = replayed_blocks(message, meta.blocks) if meta.blocks else None
    for block in blocks or [{"type": "text", "text": _text(message.get("content"))}]:
        yield UserMessageChunk(session_update="user_message_chunk", content=block, message_id=meta.message_id)


def _assistant_chunks(message: dict, meta: EntryMeta) -> Iterator[Any]:
    message_id = meta.message_id
    if reasoning := meta.reasoning:
        yield AgentThoughtChunk(
            session_update="agent_thought_chunk", content=text_block(reasoning), message_id=message_id
        )
    if text := message.get("content"):
        yield AgentMessageChunk(session_update="agent_message_chunk", content=text_block(text), message_id=message_id)


def _called_names(message: dict) -> dict[str, str]:
    calls = message.get("tool_calls") if message.get("role") == "assistant" else None
    if not isinstance(calls, list):
        return {}
    return {
        call["id"]: call["function"]["name"]
        for call in calls
        if isinstance(call, dict)
        and isinstance(call.get("function"), dict)
        and isinstance(call.get("id"), str)
        and isinstance(call["function"].get("name"), str)
    }


def _tool_updates(message: dict, tool: ToolDisplay, name: str | None) -> Iterator[Any]:
    call_id = message["tool_call_id"]
    # A terminal id dies with the process that made it, so a replayed command shows its output as text.
    stored = tool.content or []
    content: list[Any] = [item for item in stored if item.get("type") != "terminal"]
    if not content or len(content) < len(stored):
        content.append(tool_content(text_block(message.get("content") or "")))
    started = start_tool_call(
        call_id,
        tool.title or tool.name,
        kind=tool.kind,
        status=tool.status,
        raw_input=tool.raw_input,
        locations=_locations(tool.locations),
        content=content,
    )
    yield named(started, name)


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def _waiting(call_id: str, question: str | None) -> Any:
    """A tool call waiting for the user is `pending` (the spec's status for a call awaiting the user, as during a
    permission request) and shows the question; answered, it is `in_progress` again and the question goes."""
    if question is None:
        return update_tool_call(call_id, status="in_progress", content=[])
    shown = tool_content(text_block(f"Waiting for your answer: {question}"))
    return update_tool_call(call_id, status="pending", content=[shown])
