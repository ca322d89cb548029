"""Multi-agent patterns and presets: bridges, chains, loops, supervisors, planners, fan-out.

    from crow.patterns import chain, coder_agent, reviewer_agent

    def build():
        return chain(coder_agent(), reviewer_agent())     # crow acp --agent file.py:build

Every pattern returns a ready agent (a crow_acp.MultiAgent) that the editor sees as one agent,
and patterns nest: loop(sequential(coder, reviewer), judge).
"""

from __future__ import annotations

from crow_acp.multi import Bridge

from .bridge import AgentBridge, add_agent_callback, agent_bridge
from .chain import chain, sequential
from .foreign import acp_member, make_member, member, remote_member
from .loop import Verdict, loop, parse_verdict
from .parallel import parallel
from .planner import executor_tools, planner_executor, planner_tools
from .presets import (
    RolePrompt,
    coder_agent,
    executor_agent,
    judge_agent,
    planner_agent,
    reviewer_agent,
    router_agent,
)
from .progress import ProgressSummaries, progress_summaries
from .supervisor import supervisor

__all__ = [
    "AgentBridge",
    "Bridge",
    "ProgressSummaries",
    "RolePrompt",
    "Verdict",
    "acp_member",
    "add_agent_callback",
    "agent_bridge",
    "chain",
    "coder_agent",
    "executor_agent",
    "executor_tools",
    "judge_agent",
    "loop",
    "make_member",
    "member",
    "parallel",
    "parse_verdict",
    "planner_agent",
    "planner_executor",
    "planner_tools",
    "progress_summaries",
    "remote_member",
    "reviewer_agent",
    "router_agent",
    "sequential",
    "supervisor",
]
