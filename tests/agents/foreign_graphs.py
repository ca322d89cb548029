"""Graphs with foreign members, for tests/multi/test_foreign_member.py.

The crow members' models come from $CROW_TEST_MODEL_<NAME>_URL (see multi_agents.py); the foreign
member is tests/agents/foreign_acp_agent.py, or $FOREIGN_URL for a remote one.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from multi_agents import config_for

from crow.patterns import acp_member, chain, coder_agent, member, parallel, remote_member, reviewer_agent, sequential

MEMBER = [sys.executable, str(Path(__file__).with_name("foreign_acp_agent.py"))]


def outsider() -> Any:
    passed = {key: os.environ.get(key, "") for key in ("FOREIGN_LOG", "FOREIGN_RESUME", "FOREIGN_STUBBORN")}
    return acp_member(MEMBER, name="outsider", env=passed)


def build_chain() -> Any:
    """coder → outsider → reviewer."""
    return chain(coder_agent(config_for("coder")), outsider(), reviewer_agent(config_for("reviewer")))


def build_first() -> Any:
    """outsider → reviewer: the foreign member as the graph's entry."""
    return chain(outsider(), reviewer_agent(config_for("reviewer")))


def build_sequential() -> Any:
    return sequential(coder_agent(config_for("coder")), outsider())


def build_parallel() -> Any:
    return parallel(
        [outsider(), coder_agent(config_for("alpha"), name="alpha")],
        fan_in=coder_agent(config_for("merger"), name="merger"),
    )


def build_remote() -> Any:
    """coder → a `crow serve` at $FOREIGN_URL, with the token $FOREIGN_TOKEN."""
    url = os.environ.get("FOREIGN_URL", "ws://127.0.0.1:9/acp")
    far = remote_member(url, name="remote", token=os.environ.get("FOREIGN_TOKEN"))
    return chain(coder_agent(config_for("coder")), far)


def named_member_chain() -> Any:
    """coder → [agents.helper] from config.toml (not a build*: only a config that declares it can build it)."""
    return chain(coder_agent(config_for("coder")), member("helper"))


def build_crow_member() -> Any:
    """coder → another `crow acp` (its own home and scripted model, from $MEMBER_HOME and $MEMBER_MODEL_URL)."""
    env = {
        "CROW_HOME": os.environ.get("MEMBER_HOME", ""),
        "OPENAI_BASE_URL": os.environ.get("MEMBER_MODEL_URL", ""),
        "OPENAI_API_KEY": "test-key",
    }
    return chain(
        coder_agent(config_for("coder")), acp_member([sys.executable, "-m", "crow", "acp"], name="crowmate", env=env)
    )


def build_fast_agent() -> Any:
    """coder → fast-agent (PyPI fast-agent-mcp, from the venv at $FAST_AGENT_BIN) on the scripted model at
    $FAST_AGENT_MODEL_URL, its config written to $FAST_AGENT_CONFIG by the test (with the MCP servers named in
    $FAST_AGENT_SERVERS, if set)."""
    config = os.environ.get("FAST_AGENT_CONFIG", "fastagent.config.yaml")
    command = [os.environ.get("FAST_AGENT_BIN", "fast-agent"), "serve", "--transport", "acp", "-c", config]
    if servers := os.environ.get("FAST_AGENT_SERVERS"):  # MCP servers of its config it is to use
        command += ["--servers", servers]
    fast = acp_member([*command, "--model", "generic.scripted-fast"], name="fast")
    return chain(coder_agent(config_for("coder")), fast)
