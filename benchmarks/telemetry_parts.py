"""The parts of telemetry's cost for one tool turn, timed in this process (benchmarks/serve_telemetry.py).

metrics_cost   the metrics observer and the store timing, fed one tool turn's events and store operations
spans_cost     the spans of one tool turn (invoke_agent, two chats, one execute_tool) through the real SDK,
               CPU of the thread that opens them
export_cost    the same spans' OTLP/HTTP export (protobuf encoding, the HTTP request), in batches of 512
               as the export thread sends them, CPU of the sending thread
"""

from __future__ import annotations

import time
from typing import Any

TURN_SPANS = 4


def metrics_cost(turns: int = 20_000) -> float:
    """CPU seconds the metrics take for one tool turn's events and store operations."""
    from crow_acp.events import (
        ModelCallFinished,
        TextDelta,
        ToolCallFinished,
        ToolCallRunning,
        ToolCallStarted,
        ToolResult,
        ToolView,
        TurnFinished,
        Usage,
    )
    from crow_acp.web.metrics import ServeMetrics

    metrics, sid = ServeMetrics(), "s" * 32
    observer = metrics.observer("default")
    events = [
        TextDelta(sid, "m1", "Reading."),
        ToolCallStarted(sid, "c", "read_file", {}, ToolView("Read notes.txt", "read")),
        ModelCallFinished(sid, Usage(180, 8), "tool_calls", 128_000),
        ToolCallRunning(sid, "c"),
        ToolCallFinished(sid, "c", "read_file", ToolResult("hello")),
        TextDelta(sid, "m2", "done"),
        ModelCallFinished(sid, Usage(200, 5), "stop", 128_000),
        TurnFinished(sid, "end_turn"),
    ]
    began = time.thread_time()
    for _ in range(turns):
        observer.turn_started(sid)
        for event in events:
            observer(event)
        for kind in ("write", "write", "write", "call"):
            metrics.store_timing(kind, 0.001)
    return (time.thread_time() - began) / turns


def one_turn() -> None:
    from crow_acp.events import Usage
    from crow_acp.telemetry import gen_ai

    with gen_ai.invoke_agent("crow", "s" * 32, "read the notes") as agent:
        with gen_ai.chat("gpt-4o-mini", "openai") as chat:
            gen_ai.replied(chat, Usage(180, 8), "tool_calls", ["Reading."])
        with gen_ai.execute_tool("read_file", "call_0123456789ab", {"path": "notes.txt"}) as tool:
            gen_ai.tool_done(tool, "hello", False)
        with gen_ai.chat("gpt-4o-mini", "openai") as chat:
            gen_ai.replied(chat, Usage(200, 5), "stop", ["done"])
        agent.set("crow.stop_reason", "end_turn")


def _traced(endpoint: str, extra: Any = None) -> Any:
    from crow_acp.telemetry import spans
    from crow_acp.telemetry.otel import OtelTracer

    tracer = OtelTracer(endpoint + "/v1/traces", extra)
    spans.install(tracer)
    return tracer


def spans_cost(endpoint: str, turns: int = 100, repeats: int = 5) -> float:
    """CPU seconds of this thread for the spans of one tool turn, exported to `endpoint` by the SDK's thread:
    the best of `repeats` runs (a run now and then costs several times more on this shared machine; the
    best is the cost itself, as timeit reports it). 100 turns: their 400 spans stay under the SDK's batch
    size (512), so the export thread does not wake during a run."""
    from crow_acp.telemetry import spans

    runs = []
    for _ in range(repeats):
        _traced(endpoint)
        try:
            began = time.thread_time()
            for _ in range(turns):
                one_turn()
            runs.append((time.thread_time() - began) / turns)
        finally:
            spans.shutdown()
    return min(runs)


def export_cost(endpoint: str, turns: int = 640) -> float:
    """CPU seconds of the sending thread to export one tool turn's spans (encoded and posted to `endpoint`)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from crow_acp.telemetry import spans

    kept = InMemorySpanExporter()
    _traced(endpoint, SimpleSpanProcessor(kept))
    try:
        for _ in range(turns):
            one_turn()
    finally:
        spans.shutdown()
    ended = list(kept.get_finished_spans())
    exporter = OTLPSpanExporter(endpoint=endpoint + "/v1/traces")
    exporter.export(ended[:8])  # the connection and first-use imports, not counted
    runs = []
    for at in range(0, len(ended), 512):  # one batch a run, the best of them (as spans_cost)
        began = time.thread_time()
        exporter.export(ended[at : at + 512])
        runs.append((time.thread_time() - began) / (len(ended[at : at + 512]) / TURN_SPANS))
    exporter.shutdown()
    return min(runs)
