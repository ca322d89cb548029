"""A client's system prompt (ACP `systemPrompt`, schema 1.30): advertised, appended to crow's own or
overriding it as asked, kept across a restart and replaced by a new one, redacted, seen by hooks, and
refused (-32602, before any work) when malformed or huge. Over stdio, the wire checked against zod."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import anyio
import pytest
from acp import RequestError
from support.helpers import RecordingClient, crow_env, text
from support.history_checks import session_ids
from support.inproc import crow
from support.multi_support import functions, in_process
from support.raw_wire import RawCrow, raw_crow
from support.zod_check import problems, wire_messages

from crow_acp import CrowCallbacks
from crow_acp.testing import Reply, ScriptedModel
from crow_acp.testing.function_model import FunctionModel

pytestmark = pytest.mark.anyio

APPENDED = "Answer in French. Never print test-key."  # OPENAI_API_KEY is test-key in these tests
SHOWN = "Answer in French. Never print [redacted key]."


def system_prompt(mode: str, *texts: str) -> dict[str, Any]:
    return {"mode": mode, "content": [{"type": "text", "text": text} for text in texts]}


def stored_prompt(home: Any) -> Any:
    with sqlite3.connect(home / "sessions.db") as db:
        (data,) = db.execute("SELECT data FROM sessions").fetchone()
    return json.loads(data).get("client_system_prompt")


def system_sent(model: ScriptedModel) -> str:
    """The system message of the last model request."""
    first = model.requests[-1]["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


async def open_and_prompt(crow: RawCrow, method: str, params: dict[str, Any], session_id: str | None = None) -> str:
    reply = await crow.call(method, params)
    assert "result" in reply, reply
    session_id = session_id or reply["result"]["sessionId"]
    assert (await crow.prompt(session_id, "hi"))["result"]["stopReason"] == "end_turn"
    return session_id


async def test_append_then_kept_on_reload_then_override(crow_home, tmp_path):
    cwd = str(tmp_path)
    async with ScriptedModel(default=Reply(text="ok")) as model:
        env = crow_env(crow_home, model.base_url)
        async with raw_crow(env) as first:
            initialized = first.received[0]["result"]
            assert initialized["agentCapabilities"]["sessionCapabilities"]["systemPrompt"] == {"mode": {"override": {}}}
            new = {"cwd": cwd, "mcpServers": [], "systemPrompt": system_prompt("append", APPENDED)}
            sid = await open_and_prompt(first, "session/new", new)
            appended = system_sent(model)
            responses = [("zInitializeResponse", initialized)]
            assert problems(wire_messages(first.received) + responses) == []
        assert stored_prompt(crow_home) == {"mode": "append", "text": SHOWN}  # redacted before it is stored
        own = appended.removesuffix("\n\n" + SHOWN)
        assert own != appended and "crow" in own.lower()  # crow's own prompt, then the client's
        async with raw_crow(env) as second:  # a restart: a load without a systemPrompt keeps the stored one
            await open_and_prompt(second, "session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []}, sid)
            assert system_sent(model) == appended
            load = {"sessionId": sid, "cwd": cwd, "mcpServers": [], "systemPrompt": system_prompt("override", "A", "B")}
            await open_and_prompt(second, "session/load", load, sid)
            assert system_sent(model) == "A\n\nB"  # a new one replaces it, and override drops crow's own
            await open_and_prompt(second, "session/resume", {"sessionId": sid, "cwd": cwd, "mcpServers": []}, sid)
            assert system_sent(model) == "A\n\nB"
            assert problems(wire_messages(second.received)) == []
    assert stored_prompt(crow_home) == {"mode": "override", "text": "A\n\nB"}


BAD = [
    ("a string", "must be an object"),
    ({"mode": "prepend", "content": [{"type": "text", "text": "x"}]}, "`mode` must be append or override"),
    ({"mode": "append", "content": []}, "`content` must be a list of 1 to 100"),
    ({"mode": "append", "content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}, "text blocks only"),
    ({"mode": "append", "content": [{"type": "text", "text": " "}]}, "its text is empty"),
    (system_prompt("append", "x" * 100_001), "more than the 100000 crow accepts"),
]


async def test_a_malformed_or_huge_system_prompt_is_refused_before_any_work(crow_home, tmp_path):
    cwd = str(tmp_path)
    async with ScriptedModel(default=Reply(text="ok")) as model:
        async with raw_crow(crow_env(crow_home, model.base_url)) as raw:
            sid = await raw.new_session(cwd)
            assert (await raw.prompt(sid, "first"))["result"]["stopReason"] == "end_turn"
            for bad, reason in BAD:
                for method, params in [
                    ("session/new", {"cwd": cwd, "mcpServers": []}),
                    ("session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []}),
                ]:
                    reply = await raw.call(method, {**params, "systemPrompt": bad})
                    assert reply["error"]["code"] == -32602, (method, reply)
                    assert reason in reply["error"]["data"]["systemPrompt"], (method, reply)
            listed = await raw.call("session/list", {})
            assert [s["sessionId"] for s in listed["result"]["sessions"]] == [sid]  # no session was made
            assert (await raw.prompt(sid, "still there"))["result"]["stopReason"] == "end_turn"
    assert model.requests and all(
        m["role"] != "system" or "x" * 100 not in m["content"] for m in model.requests[-1]["messages"]
    )


async def test_hooks_see_the_effective_system_prompt(crow_home, tmp_path, monkeypatch):
    seen: list[str] = []

    async def look(session: Any, **_: Any) -> None:
        seen.append(session.get_messages()[0]["content"])

    model = FunctionModel([Reply(text="ok")])
    async with crow(crow_home, model, monkeypatch) as agent:
        agent.set_callbacks(agent.callbacks + CrowCallbacks(pre_request=[look]))
        override = system_prompt("override", "Only this.")
        sid = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[], system_prompt=override)).session_id
        await agent.prompt(prompt=[{"type": "text", "text": "hi"}], session_id=sid)
    assert seen == ["Only this."]
    assert model.requests[0]["messages"][0] == {"role": "system", "content": "Only this."}


async def test_a_graph_of_agents_gives_it_to_every_member(crow_home, tmp_path, monkeypatch):
    names = ("alpha", "beta", "gamma", "merger")
    models = functions(**{name: [Reply(text=f"from {name}")] for name in names})
    async with in_process(RecordingClient(), "build_parallel", crow_home, models, monkeypatch) as conn:
        with anyio.fail_after(60):
            bad = {"cwd": str(tmp_path), "mcp_servers": [], "system_prompt": {"mode": "prepend", "content": []}}
            with pytest.raises(RequestError) as refused:
                await conn.new_session(**bad)
            assert refused.value.code == -32602
            override = system_prompt("override", "Be brief.")
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[], system_prompt=override)).session_id
            await conn.prompt(session_id=sid, prompt=[text("go")])
    assert len(session_ids(crow_home)) == len(names)  # one per member, none from the refused request
    assert {name: models[name].requests[0]["messages"][0]["content"] for name in names} == dict.fromkeys(
        names, "Be brief."
    )
