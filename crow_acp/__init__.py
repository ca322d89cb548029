"""crow_acp: the ACP agent server core.

Public names load lazily, so `crow acp` answers `initialize` without importing what a turn needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "AcpAgent": "crow_acp.agent",
    "CrowCallbacks": "crow_acp.hooks",
    "SlashCommand": "crow_acp.hooks",
    "Allow": "crow_acp.hooks",
    "Refuse": "crow_acp.hooks",
    "Rewrite": "crow_acp.hooks",
    "Answer": "crow_acp.hooks",
    "ToolCallInfo": "crow_acp.hooks",
    "ToolDecision": "crow_acp.hooks",
    "BeginSessionArgs": "crow_acp.hooks",
    "PreRequestArgs": "crow_acp.hooks",
    "PostResponseArgs": "crow_acp.hooks",
    "BeforeToolArgs": "crow_acp.hooks",
    "AfterToolArgs": "crow_acp.hooks",
    "EndTurnArgs": "crow_acp.hooks",
    "EndSessionArgs": "crow_acp.hooks",
    "StopReason": "crow_acp.hooks",
    "permission_policy": "crow_acp.tool_gate",
    "SessionAccess": "crow_acp.session",
    "Config": "crow_acp.config",
    "load_config": "crow_acp.config",
    "FunctionTool": "crow_acp.tools",
    "ToolContext": "crow_acp.tools",
    "ToolResult": "crow_acp.events",
    "ToolView": "crow_acp.events",
    "MultiAgent": "crow_acp.multi",
    "serve": "crow_acp.serve",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from .agent import AcpAgent
    from .config import Config, load_config
    from .events import ToolResult, ToolView
    from .hooks import (
        AfterToolArgs,
        Allow,
        Answer,
        BeforeToolArgs,
        BeginSessionArgs,
        CrowCallbacks,
        EndSessionArgs,
        EndTurnArgs,
        PostResponseArgs,
        PreRequestArgs,
        Refuse,
        Rewrite,
        SlashCommand,
        StopReason,
        ToolCallInfo,
        ToolDecision,
    )
    from .tool_gate import permission_policy
    from .multi import MultiAgent
    from .serve import serve
    from .session import SessionAccess
    from .tools import FunctionTool, ToolContext


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'crow_acp' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_EXPORTS[name]), name)
