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

EXTENSIONS = ["_crow/share"]
"""Crow's own methods, advertised in `_meta.crow.extensions` (docs/serve.md#sharing-a-session)."""
"""systemPrompt in both modes: append (every agent that advertises it) and override."""


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
        ),
        agent_info=Implementation(name="crow", title="Crow", version=__version__),
        auth_methods=auth_methods(client_capabilities),
        field_meta={"crow": {"extensions": list(EXTENSIONS)}},
    )
