"""An agent whose `probe` tool says which of OpenTelemetry's SDK modules this crow process has imported:
`crow acp --agent tests/agents/otel_probe_agent.py:build` (tests/telemetry/test_traces.py)."""

from __future__ import annotations

import sys
from typing import Any

from crow_acp import AcpAgent, FunctionTool

WATCHED = ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http")


async def probe(args: dict[str, Any], ctx: Any) -> str:
    return "imported: " + (",".join(name for name in WATCHED if name in sys.modules) or "none")


def build() -> AcpAgent:
    tool = FunctionTool("probe", "Report imports.", {"type": "object", "properties": {}}, probe, read_only=True)
    return AcpAgent(tools=[tool])
