"""Ready agents for the patterns: coder, reviewer, judge, planner, executor, router.

Each is an AcpAgent with crow's default callbacks (system prompt, skills, compaction, and the
editor's file and terminal tools when the editor offers them) plus a role section appended to
the system prompt. Names are what the editor shows ("**reviewer:** …") and must differ within
one MultiAgent (duplicates get "-2", "-3").
"""

from __future__ import annotations

from typing import Any

from crow_acp.acp.agent import AcpAgent
from crow_acp.api import CrowCallbacks, SessionAccess
from crow_acp.config import Config

from .planner import executor_tools, planner_tools

REVIEWER = """You review work another agent hands you: its result is the user message. Check it against
the task; read the code with your tools when you can. Reply with concrete findings (what is wrong, where,
how to fix it) and a one-line overall assessment. Do not redo the work yourself."""
JUDGE = """You decide whether a task is done. You get the task and the latest result. The first line of
your answer must be `STOP: <why it is done>` or `CONTINUE: <what must be done next>`; a short explanation
may follow. Say STOP only when the result fully meets the task."""
PLANNER = """You plan. Break the task into a few concrete, ordered steps and record them with create_plan
(revise them with update_plan when asked). Do not carry the steps out yourself; end with a short overview."""
EXECUTOR = """You carry out a plan step by step. Before a step call mark_step with in_progress, after it
with completed, or with blocked and notes saying why. End with what you did and what is left."""


class RolePrompt:
    """Appends a role section to the system prompt the other callbacks set, and keeps it there.

    Put it after the prompt callback in begin_session and pre_request: the prompt callback may
    rebuild the system message before any model call, and this puts the role back.
    """

    def __init__(self, text: str) -> None:
        self.section = f"# Your role\n{text.strip()}"

    async def __call__(self, session: SessionAccess, **_: Any) -> None:
        entries = session.entries()  # read-only and uncopied: this runs before every model call
        system = entries[0].message["content"] if entries and entries[0].message["role"] == "system" else ""
        if self.section not in (system or ""):
            session.set_system_prompt(f"{system}\n\n{self.section}".strip())


def preset_agent(
    config: Config | None, name: str, role: str | None = None, extra: CrowCallbacks | None = None
) -> AcpAgent:
    """An agent with crow's default callbacks, an optional role section, and extra callbacks."""
    from crow.presets import default_callbacks

    agent = AcpAgent(config, name=name)
    callbacks = default_callbacks(agent.config) + (extra or CrowCallbacks())
    if role:
        role_prompt = RolePrompt(role)
        callbacks = callbacks + CrowCallbacks(begin_session=[role_prompt], pre_request=[role_prompt])
    agent.set_callbacks(callbacks)
    return agent


def coder_agent(config: Config | None = None, *, name: str = "coder") -> AcpAgent:
    """crow's default coding agent: prompt, skills, compaction, editor file and terminal tools."""
    return preset_agent(config, name)


def reviewer_agent(config: Config | None = None, *, name: str = "reviewer") -> AcpAgent:
    return preset_agent(config, name, REVIEWER)


def judge_agent(config: Config | None = None, *, name: str = "judge") -> AcpAgent:
    """The loop's judge: answers `STOP: reason` or `CONTINUE: reason` (see crow.patterns.loop)."""
    return preset_agent(config, name, JUDGE)


def planner_agent(config: Config | None = None, *, name: str = "planner") -> AcpAgent:
    return preset_agent(config, name, PLANNER, CrowCallbacks(begin_session=[planner_tools()]))


def executor_agent(config: Config | None = None, *, name: str = "executor") -> AcpAgent:
    return preset_agent(config, name, EXECUTOR, CrowCallbacks(begin_session=[executor_tools()]))


def router_agent(config: Config | None = None, *, name: str = "router") -> AcpAgent:
    """The supervisor's router: only its model is used (side calls with their own instructions)."""
    return AcpAgent(config, name=name)
