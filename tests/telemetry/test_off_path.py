"""Tracing off, a tool turn runs no line of crow_acp/telemetry/ (the callers check `spans.on` first); on, the
same profile sees it, and the turn's spans reach the SDK's processor with their parent links (otel.py's
own span records, handed to the SDK as ReadableSpans)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from support.helpers import RecordingClient, text
from support.inproc import crow

from crow_acp.telemetry import spans
from crow_acp.testing import Reply, ToolCall
from crow_acp.testing.function_model import FunctionModel

pytestmark = pytest.mark.anyio
TELEMETRY = str(Path(spans.__file__).parent)


def tool_turn(path: Path) -> FunctionModel:
    def reply(request: dict) -> Reply:
        if request["messages"][-1]["role"] == "tool":
            return Reply(text="done", usage={"prompt_tokens": 20, "completion_tokens": 2})
        return Reply(text="Reading.", tool_calls=[ToolCall("read_file", {"path": str(path)}, id="r1")])

    return FunctionModel(reply)


@contextmanager
def called_files() -> Iterator[set[str]]:
    """The file of every Python function called on this thread meanwhile."""
    seen: set[str] = set()

    def profile(frame: Any, event: str, _: Any) -> None:
        if event == "call":
            seen.add(frame.f_code.co_filename)

    sys.setprofile(profile)
    try:
        yield seen
    finally:
        sys.setprofile(None)


async def profiled_turn(crow_home: Path, tmp_path: Path, monkeypatch: Any) -> set[str]:
    (tmp_path / "notes.txt").write_text("hello\n")
    async with crow(crow_home, tool_turn(tmp_path / "notes.txt"), monkeypatch, RecordingClient()) as agent:
        sid = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await agent.prompt(session_id=sid, prompt=[text("warm up")])
        with called_files() as seen:
            assert (await agent.prompt(session_id=sid, prompt=[text("read it")])).stop_reason == "end_turn"
    return seen


async def test_tracing_off_a_tool_turn_calls_nothing_in_telemetry(crow_home, tmp_path, monkeypatch):
    assert not spans.on
    seen = await profiled_turn(crow_home, tmp_path, monkeypatch)
    assert any(name.endswith("core/loop.py") for name in seen)  # the profile saw the turn
    assert not [name for name in seen if name.startswith(TELEMETRY)]


async def test_tracing_on_the_same_turn_is_spans_with_their_parents(crow_home, tmp_path, monkeypatch):
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from crow_acp.telemetry.otel import OtelTracer

    kept = InMemorySpanExporter()
    spans.install(OtelTracer("http://127.0.0.1:9/v1/traces", SimpleSpanProcessor(kept)))
    try:
        seen = await profiled_turn(crow_home, tmp_path, monkeypatch)
    finally:
        spans.shutdown()
    assert [name for name in seen if name.startswith(TELEMETRY)]
    ended = [s for s in kept.get_finished_spans() if s.attributes["gen_ai.operation.name"] != "invoke_agent"]
    turns = [s for s in kept.get_finished_spans() if s.name == "invoke_agent crow"]
    assert len(turns) == 2 and all(s.parent is None for s in turns)
    last = turns[1].context
    mine = sorted(s.name for s in ended if s.context.trace_id == last.trace_id)
    assert mine == ["chat function-model", "chat function-model", "execute_tool read_file"], mine
    assert all(s.parent.span_id == last.span_id for s in ended if s.context.trace_id == last.trace_id)
    mine_spans = [s for s in ended if s.context.trace_id == last.trace_id]
    [chat] = [s for s in mine_spans if s.attributes.get("gen_ai.response.finish_reasons") == ["stop"]]
    assert chat.attributes["gen_ai.usage.input_tokens"] == 20 and chat.attributes["gen_ai.usage.output_tokens"] == 2
    assert turns[1].attributes["crow.stop_reason"] == "end_turn" and turns[1].end_time >= turns[1].start_time
