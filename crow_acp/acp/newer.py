"""ACP shapes newer than the SDK's: what clients of schema 1.20 to 1.34 (2026-11-20) send crow.

The installed SDK (agent-client-protocol 0.12.1) was generated from schema 1.19: its pydantic models
drop every field they do not know, so the capabilities a newer client advertises (notices,
compaction, subagents, plan operations) would never reach crow. The requests crow routes are
re-declared here as subclasses that keep those fields, named as the spec names them
(agentclientprotocol.com, protocol/v1); the machine-readable reference is the zod schema of
@agentclientprotocol/sdk 2.4.0 (tests/zod_check.py validates what crow sends against it).

Every feature is offered only to a client that advertised it: ClientFeatures says which.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from acp.schema import (
    AgentCapabilities,
    AgentPlanContentUpdate,
    AgentPlanRemovedUpdate,
    ForkSessionRequest,
    InitializeRequest,
    InitializeResponse,
    LoadSessionRequest,
    NewSessionRequest,
    PlanEntry,
    PlanUpdateItems,
    PlanUpdateMarkdown,
    ResumeSessionRequest,
    SessionCapabilities,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
)
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..events import CompactionStatus, NoticeSeverity, PlanRemoved, PlanUpdated
from .update_door import NewerUpdate


@dataclass(frozen=True)
class ClientFeatures:
    """The newer client capabilities, each True only when the client advertised it."""

    elicitation_form: bool = False
    """clientCapabilities.elicitation.form (1.21): `elicitation/create` in form mode."""
    elicitation_url: bool = False
    """clientCapabilities.elicitation.url (1.21): `elicitation/create` in URL mode."""
    notices: bool = False
    """clientCapabilities.session.notices (1.25): `notice` session updates."""
    compaction: bool = False
    """clientCapabilities.session.compaction (1.25): `compaction_update` and `compaction_summary_chunk`."""
    subagents: bool = False
    """clientCapabilities.subagents (1.34): child sessions, `subagent_update`, `session_message`."""
    plan: bool = False
    """clientCapabilities.plan (1.34): `plan_update` and `plan_removed` instead of the legacy `plan`."""

    @classmethod
    def from_capabilities(cls, raw: Any) -> ClientFeatures:
        """Read from the raw `clientCapabilities` object; anything malformed counts as not advertised."""
        caps = _object(raw)
        elicitation = _object(caps.get("elicitation"))
        session = _object(caps.get("session"))
        return cls(
            elicitation_form=_advertised(elicitation.get("form")),
            elicitation_url=_advertised(elicitation.get("url")),
            notices=_advertised(session.get("notices")),
            compaction=_advertised(session.get("compaction")),
            subagents=_advertised(caps.get("subagents")),
            plan=_advertised(caps.get("plan")),
        )


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _advertised(value: Any) -> bool:
    """A capability object (`{}` and up) advertises it; null, false or anything else does not."""
    return isinstance(value, dict)


class NewerInitializeRequest(InitializeRequest):
    """`initialize`, with the newer client capabilities kept as `client_features`."""

    client_features: ClientFeatures = ClientFeatures()

    @model_validator(mode="before")
    @classmethod
    def _read_features(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = {**data, "client_features": ClientFeatures.from_capabilities(data.get("clientCapabilities"))}
        return data


# ---- Notices, compaction updates (1.25) and the tool call's `name` (1.22): sent through update_door ----


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

    name: str | None = None


class NamedToolCallProgress(ToolCallProgress, NewerUpdate):
    """zToolCallUpdate with `name`."""

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


# Client system prompts (schema 1.30): `systemPrompt` {mode, content} on session/new, load, resume and
# fork, which the SDK's models drop; crow keeps it raw as `system_prompt` and checks it itself
# (acp/system_prompt.py answers -32602 for a bad one). Advertised as `sessionCapabilities.systemPrompt`,
# `mode.override` saying that crow also lets the client's prompt replace its own.


class _CarriesSystemPrompt(BaseModel):
    system_prompt: Annotated[Any, Field(alias="systemPrompt")] = None
    """The raw `systemPrompt` object, or None when the request has none."""


class NewerNewSessionRequest(NewSessionRequest, _CarriesSystemPrompt):
    """`session/new`, with its `systemPrompt`."""


class NewerLoadSessionRequest(LoadSessionRequest, _CarriesSystemPrompt):
    """`session/load`, with its `systemPrompt`."""


class NewerResumeSessionRequest(ResumeSessionRequest, _CarriesSystemPrompt):
    """`session/resume`, with its `systemPrompt`."""


class NewerForkSessionRequest(ForkSessionRequest, _CarriesSystemPrompt):
    """`session/fork`, with its `systemPrompt`."""


class NewerSessionCapabilities(SessionCapabilities):
    system_prompt: Annotated[dict[str, Any] | None, Field(alias="systemPrompt")] = None
    """zSessionSystemPromptCapabilities: `{}` for append only, `{"mode": {"override": {}}}` for both."""


class NewerAgentCapabilities(AgentCapabilities):
    session_capabilities: Annotated[NewerSessionCapabilities, Field(alias="sessionCapabilities")] = (
        NewerSessionCapabilities()
    )


class NewerInitializeResponse(InitializeResponse):
    agent_capabilities: Annotated[NewerAgentCapabilities, Field(alias="agentCapabilities")] = NewerAgentCapabilities()
