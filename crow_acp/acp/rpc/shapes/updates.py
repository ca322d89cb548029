"""Session updates newer than the SDK's models: notices, compaction updates (1.25), the tool call's `name`
(1.22), plan operations (1.34)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from acp.schema import (
    AgentPlanContentUpdate,
    AgentPlanRemovedUpdate,
    PlanEntry,
    PlanUpdateItems,
    PlanUpdateMarkdown,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
)
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
)

from ....events import CompactionStatus, NoticeSeverity, PlanRemoved, PlanUpdated
from ..door import NewerUpdate
from .capabilities import FAST

# ---- Notices, compaction updates (1.25) and the tool call's `name` (1.22): sent through rpc/door.py ----


class Notice(NewerUpdate, BaseModel):
    """zNotice, the `notice` session update: live information for the user, never part of the history.

    Sent only to a client that advertised `clientCapabilities.session.notices`."""

    model_config = ConfigDict(populate_by_name=True)
    session_update: Annotated[Literal["notice"], Field(alias="sessionUpdate")]
    severity: NoticeSeverity
    title: Annotated[str, Field(min_length=1)]
    description: str | None = None


class CompactionUpdate(NewerUpdate, BaseModel):
    """zCompactionUpdate: a compaction's status; the first one fixes its place in the timeline, later
    ones with the same id patch it. Sent only to a client that advertised `session.compaction`."""

    model_config = ConfigDict(populate_by_name=True)
    session_update: Annotated[Literal["compaction_update"], Field(alias="sessionUpdate")]
    compaction_id: Annotated[str, Field(alias="compactionId")]
    status: CompactionStatus
    summary: list[TextContentBlock] | None = None
    """The whole summary (a replay sends it here; live, it streams as CompactionSummaryChunk)."""
    error: str | None = None


class CompactionSummaryChunk(NewerUpdate, BaseModel):
    """zCompactionSummaryChunk: a piece of a compaction's summary, appended in the order received."""

    model_config = ConfigDict(populate_by_name=True)
    session_update: Annotated[Literal["compaction_summary_chunk"], Field(alias="sessionUpdate")]
    compaction_id: Annotated[str, Field(alias="compactionId")]
    content: TextContentBlock


class NamedToolCallStart(ToolCallStart, NewerUpdate):
    """zToolCall with `name`: the tool's name as the model called it (stable since 1.22)."""

    model_config = FAST

    name: str | None = None


class NamedToolCallProgress(ToolCallProgress, NewerUpdate):
    """zToolCallUpdate with `name`."""

    model_config = FAST

    name: str | None = None


def named(update: Any, name: str | None) -> Any:
    """`update` (a tool_call or tool_call_update) carrying the tool's name; any other update as it is."""
    if name is None:
        return update
    # The SDK model validated every field already: a replay of thousands of calls need not do it twice.
    if isinstance(update, ToolCallStart):
        return NamedToolCallStart.model_construct(**dict(update), name=name)
    if isinstance(update, ToolCallProgress):
        return NamedToolCallProgress.model_construct(**dict(update), name=name)
    return update


# Plan operations (schema 1.34): `plan_update` with a planId (a checklist or a Markdown plan) and
# `plan_removed`, for a client that advertised `clientCapabilities.plan`. The SDK's schema carries
# them already (unstable models), so they travel as every other update does. The stable spec gives a
# Markdown plan an optional absolute `path`; neither the SDK's models nor the zod schema of
# @agentclientprotocol/sdk 2.4.0 know that field yet, so crow sends it in the plan's `_meta`.


def plan_operation(event: PlanUpdated | PlanRemoved) -> AgentPlanContentUpdate | AgentPlanRemovedUpdate:
    """The plan operation that shows `event` to a client with plan operations."""
    if isinstance(event, PlanRemoved):
        return AgentPlanRemovedUpdate(session_update="plan_removed", plan_id=event.plan_id)
    plan: PlanUpdateItems | PlanUpdateMarkdown
    if event.markdown is not None:
        meta = {"path": event.path} if event.path else None
        plan = PlanUpdateMarkdown(type="markdown", plan_id=event.plan_id, content=event.markdown, field_meta=meta)
    else:
        entries = [PlanEntry(content=e.content, priority=e.priority, status=e.status) for e in event.entries]
        plan = PlanUpdateItems(type="items", plan_id=event.plan_id, entries=entries)
    return AgentPlanContentUpdate(session_update="plan_update", plan=plan)
