"""`crow acp` answers initialize before building the default agent; the lazy front must route what AcpAgent routes."""

from __future__ import annotations

import subprocess
import sys

from acp.agent.router import build_agent_router
from support.helpers import crow_env, write_config

from crow_acp.acp.agent import AcpAgent
from crow_acp.server.lazy_agent import LazyAgent


def routed(agent: object) -> set[str]:
    router = build_agent_router(agent, use_unstable_protocol=True)  # type: ignore[arg-type]
    return {method for method, route in router._requests.items() if route.func is not None} | {
        method for method, route in router._notifications.items() if route.func is not None
    }


def test_the_lazy_front_routes_exactly_what_the_agent_routes():
    assert routed(LazyAgent(lambda: None)) == routed(AcpAgent.__new__(AcpAgent))


def test_a_bad_config_still_ends_crow_acp_with_status_3(crow_home):
    write_config(crow_home, "max_stepz = 3\n")
    done = subprocess.run(
        [sys.executable, "-m", "crow", "acp"],
        env=crow_env(crow_home, "http://127.0.0.1:9/v1"),
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3 and "max_stepz" in done.stderr and done.stdout == ""
