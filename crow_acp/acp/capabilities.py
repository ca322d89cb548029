"""What crow advertises at initialize: one place, so `crow acp` can answer before the agent is built."""

from __future__ import annotations

from acp import PROTOCOL_VERSION
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    McpCapabilities,
    PromptCapabilities,
    SessionAdditionalDirectoriesCapabilities,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionDeleteCapabilities,
    SessionForkCapabilities,
    SessionListCapabilities,
    SessionResumeCapabilities,
)

from ..version import __version__


def initialize_response(protocol_version: int) -> InitializeResponse:
    return InitializeResponse(
        protocol_version=min(protocol_version, PROTOCOL_VERSION),
        agent_capabilities=AgentCapabilities(
            load_session=True,
            prompt_capabilities=PromptCapabilities(embedded_context=True, image=True),
            mcp_capabilities=McpCapabilities(http=True, sse=True),
            session_capabilities=SessionCapabilities(
                list=SessionListCapabilities(),
                close=SessionCloseCapabilities(),
                delete=SessionDeleteCapabilities(),
                fork=SessionForkCapabilities(),
                resume=SessionResumeCapabilities(),
                additional_directories=SessionAdditionalDirectoriesCapabilities(),
            ),
        ),
        agent_info=Implementation(name="crow", title="Crow", version=__version__),
        auth_methods=[],
    )
