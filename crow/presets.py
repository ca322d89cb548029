"""Ready agents. `default_agent` is what `crow acp` serves when no --agent is given."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from crow_acp.acp.agent import AcpAgent
from crow_acp.acp.agent_parts import Instructions
from crow_acp.api import CrowCallbacks
from crow_acp.config import Config
from crow_acp.model.client import ModelClient
from crow_acp.store import SessionStore


def default_callbacks(config: Config | None = None) -> CrowCallbacks:
    """The default prompt, skills and compaction callbacks (each package adds its part here)."""
    from crow_acp.editor import editor_tools
    from crow_acp.editor.plan_tool import plan_tool_callback
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


def default_agent(
    model: str | ModelClient | Config | None = None,
    *,
    instructions: Instructions | None = None,
    tools: Sequence[Any] = (),
    callbacks: CrowCallbacks | None = None,
    mcp_servers: Sequence[Any] = (),
    config: Config | None = None,
    store: SessionStore | None = None,
) -> AcpAgent:
    """What `crow acp` serves, with AcpAgent's keywords: `callbacks` come after the default ones, and the
    `instructions` are added to the default system prompt. `default_agent(config)` is the older call."""
    agent = AcpAgent(
        model, instructions=instructions, tools=tools, mcp_servers=mcp_servers, config=config, store=store
    )  # fmt: skip
    agent.set_callbacks(default_callbacks(agent.config) + delegation(agent, depth=0) + (callbacks or CrowCallbacks()))
    return agent


def delegation(agent: AcpAgent, *, depth: int) -> CrowCallbacks:
    """The `delegate` tool for `agent`'s sessions, when [delegate] enables it and `depth` (levels of
    delegation above this agent) is below its max_depth."""
    settings = agent.config.delegate
    if not settings.enabled or depth >= settings.max_depth:
        return CrowCallbacks()
    from crow_acp.multi.delegate import AgentHelper, DelegateTarget, budget_reset, delegate_callback

    helpers: dict[str, DelegateTarget] = {}

    def crow_helper() -> AcpAgent:
        """A crow sub-agent: the same configuration and store; listed apart from the editor's sessions."""
        sub = AcpAgent(config=agent.config, store=agent.store, name="crow-helper")
        sub.set_callbacks(default_callbacks(sub.config) + delegation(sub, depth=depth + 1))
        return sub

    def builder(name: str) -> Callable[[], AcpAgent] | None:
        """What runs helper `name`: crow itself, or the ACP agent of `[agents.NAME]` (sessions in the same store)."""
        if name == "crow":
            return crow_helper
        settings = agent.config.agents.get(name)
        if settings is None:
            return None
        from crow_acp.multi.foreign.declared import declared_agent

        return lambda: declared_agent(name, settings, agent.config, store=agent.store)

    def resolve(name: str) -> DelegateTarget | None:
        if name not in helpers:
            if (make := builder(name)) is None:
                return None
            link = agent.editor
            initialize = {
                "protocol_version": 1,
                "client_capabilities": link.capabilities,
                "client_features": link.features,
            }
            helper = helpers[name] = AgentHelper(name, make, lambda: link.conn, initialize)
            agent.close_at_shutdown(helper.shutdown)
        return helpers[name]

    offer = delegate_callback(agent, list(settings.agents), resolve)
    return CrowCallbacks(begin_session=[offer], end_turn=[budget_reset], end_session=[budget_reset])
