"""Ready agents. `default_agent` is what `crow acp` serves when no --agent is given."""

from __future__ import annotations

from crow_acp.acp.agent import AcpAgent
from crow_acp.api import CrowCallbacks
from crow_acp.config import Config


def default_callbacks(config: Config | None = None) -> CrowCallbacks:
    """The default prompt, skills and compaction callbacks (each package adds its part here)."""
    from crow_acp.core.plan_tool import plan_tool_callback
    from crow_acp.editor import editor_tools
    from crow_compact import compact_from_config

    callbacks = CrowCallbacks(begin_session=[editor_tools(), plan_tool_callback()])
    callbacks += _skills_and_prompt(config)
    compact = compact_from_config(config)
    # First in pre_request: the prompt and skills callbacks after it rebuild what a compaction removed
    # before that same model call. In post_response it checks once the reply is recorded.
    callbacks.pre_request.insert(0, compact)
    callbacks.post_response.append(compact)
    callbacks.end_session.append(compact)  # each built-in callback frees its per-session state
    return callbacks


def _skills_and_prompt(config: Config | None) -> CrowCallbacks:
    """Skills, then the prompt: the prompt's begin_session renders the tool names and the skills catalog."""
    from crow_prompt import default_prompt
    from crow_skills import default_skills

    home = config.home if config else None
    prompt = default_prompt(system_path=config.prompt.system_path if config else None, home=home)
    return default_skills(home=home) + CrowCallbacks(begin_session=[prompt], pre_request=[prompt], end_session=[prompt])


def default_agent(config: Config | None = None) -> AcpAgent:
    agent = AcpAgent(config)
    agent.set_callbacks(default_callbacks(agent.config))
    return agent
