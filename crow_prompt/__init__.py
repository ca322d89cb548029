"""crow_prompt: the system prompt, rendered from a Jinja2 template with workspace context.

    default_prompt(template=None, variables=None, *, system_path=None, home=None)

returns one callback. Put it in begin_session (it sets the system message) and in pre_request
(it rebuilds the message after compaction, and before a prompt when AGENTS.md, CROW.md,
CLAUDE.md or the template changed on disk), and in end_session (it forgets the session):

    prompt = default_prompt()
    callbacks = CrowCallbacks(begin_session=[prompt], pre_request=[prompt], end_session=[prompt])

Template variables: cwd, date, os, shell, git, tools, skills, workspace_context (see
templates/system.md). jinja2 loads on the first render, not on import.
"""

from __future__ import annotations

from .callback import PromptCallback, default_prompt
from .render import PromptTemplateError

__all__ = ["PromptCallback", "PromptTemplateError", "default_prompt"]
