"""The crow_acp core with no callbacks: `crow acp --agent tests/agents/core_agent.py:build`.

The core tests check exact model requests, so they serve this instead of the default preset, whose
system prompt, editor tools and compaction belong to the packages that add them.
"""

from __future__ import annotations

from crow_acp import AcpAgent


def build() -> AcpAgent:
    return AcpAgent()
