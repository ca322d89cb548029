"""`--log-format json` (and CROW_LOG_FORMAT): one JSON object per log line, with the time, level, logger,
message, user, session, trace id and event; a key in a message is redacted."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from acp import RequestError
from support.helpers import RecordingClient, crow_env, run_crow, text
from support.otlp_receiver import otlp_receiver
from support.serve_support import crow_serve, over_ws

from crow_acp.testing import Fault, ScriptedModel

pytestmark = pytest.mark.anyio
KEY = "sk-json-log-test-key-0123456789"
FIELDS = {"time", "level", "logger", "message", "user", "session", "trace_id", "event"}


def json_lines(home: Path) -> list[dict]:
    lines = (home / "logs" / "crow.log").read_text().splitlines()
    assert lines
    return [json.loads(line) for line in lines]  # every line is one JSON object


def failed_turn(lines: list[dict]) -> dict:
    [line] = [line for line in lines if line["event"] == "turn_failed"]
    return line


async def test_crow_acp_writes_json_lines_with_the_session_and_the_trace(crow_home, tmp_path):
    with otlp_receiver() as (receiver, url):
        async with ScriptedModel([Fault(status=400, message=f"the key {KEY} is wrong")]) as model:
            env = crow_env(crow_home, model.base_url, OPENAI_API_KEY=KEY, OTEL_EXPORTER_OTLP_ENDPOINT=url)
            async with run_crow(RecordingClient(), env, "--log-format", "json") as (conn, _):
                with anyio.fail_after(60):
                    sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                    with pytest.raises(RequestError, match="redacted key"):
                        await conn.prompt(session_id=sid, prompt=[text("hello")])
    lines = json_lines(crow_home)
    assert all(set(line) >= FIELDS for line in lines)
    line = failed_turn(lines)
    assert line["level"] == "ERROR" and line["logger"] == "crow_acp.acp.prompt.turn"
    assert line["session"] == sid and line["user"] is None  # crow acp has no users
    assert "[redacted key]" in line["message"] and KEY not in json.dumps(lines)
    assert line["time"].endswith("Z") and line["time"][:4].isdigit()
    [turn] = receiver.named("invoke_agent")
    assert line["trace_id"] == turn.trace_id and turn.status == 2  # STATUS_CODE_ERROR
    assert turn.attributes["error.type"] == "RequestError"


async def test_crow_serve_json_lines_name_the_user(crow_home, tmp_path):
    async with ScriptedModel([Fault(status=400, message="bad request")]) as model:
        env = crow_env(crow_home, model.base_url, CROW_LOG_FORMAT="json")
        async with crow_serve(env, roots=(str(tmp_path),)) as served:
            with anyio.fail_after(60):
                async with over_ws(RecordingClient(), served) as conn:
                    sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                    with pytest.raises(RequestError):
                        await conn.prompt(session_id=sid, prompt=[text("hello")])
                served.proc.terminate()
                await served.proc.wait()
    line = failed_turn(json_lines(crow_home))
    assert line["user"] == "default" and line["session"] == sid and line["trace_id"] is None  # not tracing


async def test_a_bad_crow_log_format_is_one_line_and_text(crow_home, tmp_path):
    async with ScriptedModel([]) as model:
        env = crow_env(crow_home, model.base_url, CROW_LOG_FORMAT="yaml")
        async with run_crow(RecordingClient(), env) as (conn, _):
            await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
    lines = (crow_home / "logs" / "crow.log").read_text().splitlines()
    assert lines and not lines[0].startswith("{")
