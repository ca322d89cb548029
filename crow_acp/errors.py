"""Crow's error tree: every exception crow raises derives from CrowError, under one group.

    CrowError
    ├── ConfigError          the user's or developer's setup is wrong (no API key, bad config.toml)
    │   ├── HookSignatureError   a callback names a keyword its hook list never passes (hooks.py)
    │   ├── PromptTemplateError  a system prompt template does not render (crow_prompt)
    │   ├── SkillError           a SKILL.md breaks the format (crow_skills; also a ValueError)
    │   ├── ScriptError          a scripted model's script is invalid (testing; also a ValueError)
    │   ├── TokenRequired        `crow serve` listens beyond loopback without a token (web/run.py)
    │   └── TokenError           `crow serve`'s token file cannot be read or is empty (web/token.py)
    ├── ModelError           the model endpoint failed (HTTP status, timeout, cut stream)
    ├── StoreError           the session store cannot be opened or reached (bad URL, server down, newer schema)
    │   ├── SessionBusy          another live crow process writes the session (store/protocol.py)
    │   ├── LeaseLost            another crow process took the session over (store/protocol.py)
    │   └── NotJsonError         a value to store is not JSON (plugin/blackboard.py; also a TypeError)
    ├── WireError            a JSON-RPC message cannot be handled, or the ACP peer went away
    │   └── AgentGone            `crow run`'s hosted agent stopped serving before it answered (server/hosted.py)
    ├── ToolError            a tool failure the model reads and can act on (bad path, missing match)
    │   ├── Stopped              file work gave up because its call was cancelled (editor/common.py)
    │   └── Refused              a workspace file crow reads by itself leads out of the roots
    │                            (editor/workspace_files.py)
    ├── McpError             an MCP server failed
    │   └── ServerUnavailable    the server is not connected (mcp_tool.py)
    ├── CommandError         a slash command's handler raised
    ├── CheckpointError      a file checkpoint or a rewind cannot be done; nothing was changed
    │   ├── TooManyFiles         more files under the roots than [checkpoints] max_files (timeline/tree.py)
    │   └── RewindRefused        a rewind that cannot be done as asked (acp/sessions/rewind.py)
    ├── PromptRefused        the prompt cannot go to the model as it is (acp/prompt/message.py)
    └── Exit                 the `crow` command stops with one line and an exit status (crow/exits.py)

A group is what a caller catches: `except StoreError` also sees SessionBusy. Where a class was a
ValueError or TypeError before, it still is (a second base), so old `except ValueError` keeps working.
An unknown session is the ACP error resource_not_found (-32002). A failed tool call is not an
exception to the loop: it becomes ToolResult(is_error=True) and goes back to the model.

This module sits at the bottom of the layers: it imports nothing from crow.
"""

from __future__ import annotations

from typing import Any

INTERNAL_ERROR = -32603
"""JSON-RPC's code for an error of the server itself."""


class CrowError(Exception):
    """Base class for errors crow reports to the user."""


class ConfigError(CrowError):
    """The configuration cannot work; the message says what to change."""


class ModelError(CrowError):
    """The model endpoint failed; the message is fit to show a user."""


class StoreError(CrowError):
    """The store cannot be opened or reached (bad URL, server down, newer schema)."""


class CheckpointError(CrowError):
    """A file checkpoint or a rewind cannot be done; nothing was changed."""


class WireError(CrowError):
    """A JSON-RPC message that cannot be handled; `code` is the JSON-RPC error to answer with."""

    def __init__(self, code: int, message: str, request_id: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.request_id = code, message, request_id


class ToolError(CrowError):
    """A tool failure the model should read and can act on (bad path, missing match, ...)."""


class McpError(CrowError):
    """An MCP server failed (see ServerUnavailable); the SDK's own errors are mcp.MCPError."""


class PromptRefused(CrowError):
    """The prompt cannot go to the model as it is; the message says why, and nothing is recorded."""


class CommandError(CrowError):
    """A slash command failed; the message names the command and the error."""


class HookSignatureError(ConfigError, TypeError):
    """A callback cannot be registered in a hook list: it names a keyword the list never passes."""
