"""Agent graphs for the multi-agent tests: `crow acp --agent tests/agents/multi_agents.py:<factory>`.

Every agent has its own scripted model, at $CROW_TEST_MODEL_<NAME>_URL, so a test can tell which
agent saw what. (OPENAI_BASE_URL must be unset: it overrides every profile's base_url.)
Callbacks append JSON lines to $MULTI_LOG, which survives a restart.
"""

from __future__ import annotations

import json
import os
from typing import Any

from crow.patterns import (
    chain,
    coder_agent,
    executor_agent,
    judge_agent,
    loop,
    parallel,
    planner_agent,
    progress_summaries,
    reviewer_agent,
    router_agent,
    sequential,
    supervisor,
)
from crow_acp import AcpAgent, CrowCallbacks, FunctionTool, SessionAccess, load_config


def config_for(name: str) -> Any:
    url = os.environ[f"CROW_TEST_MODEL_{name.upper()}_URL"]
    return load_config(models={"m": {"model": f"scripted-{name}", "base_url": url}}, model="m")


def log(event: str, session: SessionAccess, **fields: Any) -> None:
    if path := os.environ.get("MULTI_LOG"):
        with open(path, "a") as out:
            out.write(json.dumps({"event": event, "session": session.session_id, **fields}) + "\n")


async def lookup(args: dict[str, Any], ctx: Any) -> str:
    return f"TOOL-OUTPUT-{args.get('key', '')}"


LOOKUP = FunctionTool(
    "lookup", "Look a key up.", {"type": "object", "properties": {"key": {"type": "string"}}}, lookup, read_only=True
)


async def offer_lookup(session: SessionAccess, **_: Any) -> None:
    session.add_tool(LOOKUP)


async def count_turns(session: SessionAccess, **_: Any) -> None:
    """Writes the shared blackboard and a private key, for the sharing and persistence tests."""
    board = dict(session.get_context("blackboard") or {})
    board["coder_turns"] = board.get("coder_turns", 0) + 1
    session.set_context("blackboard", board)
    session.set_context("private_note", "coder only")


async def read_board(session: SessionAccess, *, step: int, **_: Any) -> None:
    if step == 0:
        log("board", session, blackboard=session.blackboard.snapshot(), private=session.get_context("private_note"))


def with_callbacks(agent: AcpAgent, extra: CrowCallbacks) -> AcpAgent:
    agent.set_callbacks(agent.callbacks + extra)
    return agent


def build() -> Any:
    """coder → reviewer → tester, from presets; the coder can call `lookup`."""
    extra = CrowCallbacks(begin_session=[offer_lookup], end_turn=[count_turns])
    coder = with_callbacks(coder_agent(config_for("coder")), extra)
    reviewer = with_callbacks(reviewer_agent(config_for("reviewer")), CrowCallbacks(pre_request=[read_board]))
    tester = coder_agent(config_for("tester"), name="tester")
    return chain(coder, reviewer, tester)


def build_loop() -> Any:
    """loop(sequential(coder, reviewer), judge), at most $LOOP_MAX passes."""
    worker = sequential(coder_agent(config_for("coder")), reviewer_agent(config_for("reviewer")))
    return loop(worker, judge_agent(config_for("judge")), max_iterations=int(os.environ.get("LOOP_MAX", "3")))


def build_supervisor() -> Any:
    team = [coder_agent(config_for(name), name=name) for name in ("emma", "bob", "alex")]
    return supervisor(
        team, router_agent(config_for("router")), max_iterations=int(os.environ.get("SUPERVISOR_MAX", "5"))
    )


def build_planner() -> Any:
    from crow.patterns import planner_executor

    return planner_executor(planner_agent(config_for("planner")), executor_agent(config_for("executor")))


def build_parallel() -> Any:
    members = [coder_agent(config_for(name), name=name) for name in ("alpha", "beta", "gamma")]
    return parallel(members, fan_in=coder_agent(config_for("merger"), name="merger"))


def build_progress() -> Any:
    """One coder with `lookup`, and a progress note after every two tool calls (its own summarizer model)."""
    coder = with_callbacks(coder_agent(config_for("coder")), CrowCallbacks(begin_session=[offer_lookup]))
    progress_summaries(AcpAgent(config_for("summarizer"), name="summarizer"), every_events=2).attach(coder)
    return coder


async def write_findings(session: SessionAccess, **_: Any) -> None:
    """The coder's findings, written into the blackboard as a user would: nested, in place."""
    session.set_context("blackboard", {"findings": [], "summary": {}})
    board = session.get_context("blackboard")
    board["findings"].append({"file": "add.py", "issue": "no test"})
    board["summary"]["count"] = 1
    board |= {"status": "reviewing"}


async def log_loaded_board(session: SessionAccess, *, loaded: bool, **_: Any) -> None:
    if loaded:
        log("loaded board", session, blackboard=session.blackboard.snapshot())


def build_findings() -> Any:
    """coder → reviewer: the coder leaves nested findings on the blackboard when its turn ends."""
    coder = with_callbacks(coder_agent(config_for("coder")), CrowCallbacks(end_turn=[write_findings]))
    reviewer = with_callbacks(reviewer_agent(config_for("reviewer")), CrowCallbacks(begin_session=[log_loaded_board]))
    return chain(coder, reviewer)
