"""crow_acp: the ACP agent server core.

The plugin-facing API (callbacks, hook types, tools, slash commands, SessionAccess) is
crow_acp/api.py, readable top to bottom. Public names load lazily, so `crow acp` answers `initialize` without importing what a turn needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "AcpAgent": "crow_acp.agent",
    "CrowCallbacks": "crow_acp.api",
    "SlashCommand": "crow_acp.api",
    "Allow": "crow_acp.api",
    "Refuse": "crow_acp.api",
    "Rewrite": "crow_acp.api",
    "Answer": "crow_acp.api",
    "ToolCallInfo": "crow_acp.api",
    "ToolDecision": "crow_acp.api",
    "BeginSessionArgs": "crow_acp.api",
    "PreRequestArgs": "crow_acp.api",
    "PostResponseArgs": "crow_acp.api",
    "BeforeToolArgs": "crow_acp.api",
    "AfterToolArgs": "crow_acp.api",
    "EndTurnArgs": "crow_acp.api",
    "EndSessionArgs": "crow_acp.api",
    "StopReason": "crow_acp.api",
    "permission_policy": "crow_acp.tool_gate",
    "SessionAccess": "crow_acp.api",
    "Tool": "crow_acp.api",
    "OffersCommands": "crow_acp.api",
    "EndReason": "crow_acp.api",
    "HookName": "crow_acp.api",
    "Config": "crow_acp.config",
    "load_config": "crow_acp.config",
    "FunctionTool": "crow_acp.tools",
    "ToolContext": "crow_acp.api",
    "ToolResult": "crow_acp.events",
    "ToolView": "crow_acp.events",
    "MultiAgent": "crow_acp.multi",
    "serve": "crow_acp.serve",
}

__all__ = [
    "AcpAgent",
    "AfterToolArgs",
    "Allow",
    "Answer",
    "BeforeToolArgs",
    "BeginSessionArgs",
    "Config",
    "CrowCallbacks",
    "EndReason",
    "EndSessionArgs",
    "EndTurnArgs",
    "FunctionTool",
    "HookName",
    "MultiAgent",
    "OffersCommands",
    "PostResponseArgs",
    "PreRequestArgs",
    "Refuse",
    "Rewrite",
    "SessionAccess",
    "SlashCommand",
    "StopReason",
    "Tool",
    "ToolCallInfo",
    "ToolContext",
    "ToolDecision",
    "ToolResult",
    "ToolView",
    "load_config",
    "permission_policy",
    "serve",
]

if TYPE_CHECKING:
    from .agent import AcpAgent
    from .api import (
        AfterToolArgs,
        Allow,
        Answer,
        BeforeToolArgs,
        BeginSessionArgs,
        CrowCallbacks,
        EndReason,
        EndSessionArgs,
        EndTurnArgs,
        HookName,
        OffersCommands,
        PostResponseArgs,
        PreRequestArgs,
        Refuse,
        Rewrite,
        SlashCommand,
        StopReason,
        Tool,
        ToolCallInfo,
        ToolContext,
        ToolDecision,
    )
    from .config import Config, load_config
    from .events import ToolResult, ToolView
    from .multi import MultiAgent
    from .serve import serve
    from .session_access import SessionAccess
    from .tool_gate import permission_policy
    from .tools import FunctionTool


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'crow_acp' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_EXPORTS[name]), name)
