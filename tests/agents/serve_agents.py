"""Agents for `crow serve --agent` given as instances, not factories (tests/web/test_serve_multi.py).

crow serve runs this module again for each connection, so each connection gets its own graph.
"""

from __future__ import annotations

from multi_agents import build  # this file's folder is on sys.path: crow imports it as a file target

team = build()
"""coder → reviewer → tester: a MultiAgent instance."""
