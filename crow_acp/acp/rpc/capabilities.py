"""What crow advertises at initialize: one place, so `crow acp` can answer before the agent is built."""

from __future__ import annotations

from typing import Any

from acp import PROTOCOL_VERSION
from acp.schema import (
    AgentAuthCapabilities,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    LogoutCapabilities,
    McpCapabilities,
    PromptCapabilities,
    SessionAdditionalDirectoriesCapabilities,
    SessionCloseCapabilities,
    SessionDeleteCapabilities,
    SessionForkCapabilities,
    SessionListCapabilities,
    SessionResumeCapabilities,
)

from ...version import __version__
from .auth import auth_methods
from .shapes import NewerAgentCapabilities, NewerInitializeResponse, NewerSessionCapabilities

SYSTEM_PROMPT_MODES: dict[str, Any] = {"mode": {"override": {}}}
"""systemPrompt in both modes: append (every agent that advertises it) and override."""
QUEUEING: dict[str, Any] = {"claudeCode": {"promptQueueing": True}}
"""agentCapabilities._meta, as claude-agent-acp says it: a prompt sent during a turn waits for it (queued)."""
STEERING: dict[str, Any] = {"steering": {"supported": True}}
"""InitializeResponse._meta, as claude-agent-acp says it: `_session/steering` is served (prompt/steering.py)."""
EXTENSIONS: dict[str, Any] = {
    "crow": {"extensions": ["_crow/share", "_crow/rewind"], "rewind": {"method": "_crow/rewind"}}
}
"""crow's own requests, in the answer's `_meta.crow`: `_crow/share` (docs/serve.md#sharing-a-session) and
`_crow/rewind` {sessionId, messageIndex, chat?, files?} (docs/rewind.md)."""


def initialize_response(protocol_version: int, client_capabilities: ClientCapabilities | None) -> InitializeResponse:
    return NewerInitializeResponse(
        protocol_version=min(protocol_version, PROTOCOL_VERSION),
        agent_capabilities=NewerAgentCapabilities(
            load_session=True,
            auth=AgentAuthCapabilities(logout=LogoutCapabilities()),
            prompt_capabilities=PromptCapabilities(embedded_context=True, image=True),
            mcp_capabilities=McpCapabilities(http=True, sse=True),
            session_capabilities=NewerSessionCapabilities(
                list=SessionListCapabilities(),
                close=SessionCloseCapabilities(),
                delete=SessionDeleteCapabilities(),
                fork=SessionForkCapabilities(),
                resume=SessionResumeCapabilities(),
                additional_directories=SessionAdditionalDirectoriesCapabilities(),
                system_prompt=SYSTEM_PROMPT_MODES,
            ),
            field_meta=QUEUEING,
        ),
        agent_info=Implementation(name="crow", title="Crow", version=__version__),
        auth_methods=auth_methods(client_capabilities),
        field_meta={**STEERING, **EXTENSIONS},
    )


def without_steering(answer: Any) -> Any:
    """A member's `initialize` answer as a graph gives it (multi/agent.py): a graph serves no `_session/steering`
    (its runs hand a turn from member to member), so it does not advertise it."""
    if not isinstance(answer, InitializeResponse) or not answer.field_meta:
        return answer
    meta = {key: value for key, value in answer.field_meta.items() if key not in STEERING}
    return answer.model_copy(update={"field_meta": meta or None})
