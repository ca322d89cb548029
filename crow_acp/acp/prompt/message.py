"""The editor's prompt blocks as the user message the model gets.

MCP prompt commands are expanded, resource links to MCP resources are read, images become image
parts for a vision model; whatever cannot be sent raises PromptRefused with a message for the user.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...editor.paths import Workspace
from .blocks import user_text
from .images import PromptRefused, stored_blocks, user_content
from .links import prompt_text
from .mcp_prompts import expand, inline_resources

if TYPE_CHECKING:
    from ...core.session import Session

__all__ = ["PromptRefused", "model_content", "stored_blocks"]


async def model_content(session: Session, blocks: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    expanded = await expand(session, blocks, user_text(blocks))
    expanded = await inline_resources(session, expanded)
    text_blocks = [block for block in expanded if block.get("type") != "image"]
    ws = Workspace.of(session.cwd, session.additional_directories)
    return user_content(session, await prompt_text(text_blocks, ws), expanded)  # file links: only inside the roots
