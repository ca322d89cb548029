"""MultiAgent: a→b→c chains from presets, attribution, cancel, and session/load of a graph.

Each agent has its own scripted model, so the tests can say exactly which agent saw what. The chain
and cancel logic runs in process (FunctionModel per agent, a RecordingClient as the editor); what
needs the wire or a second process (updates held until the editor knows the session, reload after
the process is gone) runs `crow acp --agent` over stdio.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from acp.schema import ClientCapabilities, FileSystemCapabilities, McpServerStdio, ReadTextFileResponse
from support.helpers import RecordingClient, text
from support.multi_support import all_text, functions, in_process, last_user, scripted, serve, titles
from support.records import read_log

from crow_acp.testing import Reply, ToolCall

pytestmark = pytest.mark.anyio
FS_CAPS = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True))


class FsClient(RecordingClient):
    """Answers fs/read_text_file, recording the session id each read and update came for."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[tuple[str, str]] = []
        self.update_sessions: set[str] = set()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.update_sessions.add(session_id)
        await super().session_update(session_id, update, **kwargs)

    async def read_text_file(self, session_id: str, path: str, **_: Any) -> Any:
        self.reads.append((session_id, path))
        return ReadTextFileResponse(content="NOTES FROM THE EDITOR BUFFER")


def chain_scripts() -> dict[str, list]:
    return {
        "coder": [
            Reply(text="Let me look.", tool_calls=[ToolCall("lookup", {"key": "k1"}, id="call_1")]),
            Reply(text="CODE-DONE: wrote add()"),
        ],
        "reviewer": [
            Reply(text="Reading notes.", tool_calls=[ToolCall("read_file", {"path": "notes.txt"}, id="call_1")]),
            Reply(text="REVIEW: add() is fine"),
        ],
        "tester": [Reply(text="TESTS: pass")],
    }


async def test_chain_runs_a_then_b_then_c_once_each_with_summaries_and_attribution(crow_home, tmp_path, monkeypatch):
    log = tmp_path / "multi.jsonl"
    client = FsClient()
    models = functions(**chain_scripts())
    async with in_process(
        client, "build", crow_home, models, monkeypatch, env={"MULTI_LOG": str(log)}, capabilities=FS_CAPS
    ) as conn:
        with anyio.fail_after(60):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            response = await conn.prompt(session_id=sid, prompt=[text("write add")])
            listed = await conn.list_sessions(cwd=str(tmp_path))

    assert response.stop_reason == "end_turn"
    coder, reviewer, tester = models["coder"], models["reviewer"], models["tester"]
    # Direction and once-per-turn: the coder got the user, the reviewer the coder, the tester the reviewer.
    assert [len(coder.requests), len(reviewer.requests), len(tester.requests)] == [2, 2, 1]
    assert last_user(coder.requests[0]) == "write add"
    assert last_user(reviewer.requests[0]) == "CODE-DONE: wrote add()"
    assert last_user(tester.requests[0]) == "REVIEW: add() is fine"
    # Only the summary crosses a bridge: not the coder's tool output, its other text, or the user's prompt.
    assert "TOOL-OUTPUT-k1" in all_text(coder.requests[1])
    for request in (*reviewer.requests, *tester.requests):
        assert "TOOL-OUTPUT" not in all_text(request) and "Let me look." not in all_text(request)
        assert "write add" not in all_text(request)

    # One editor session: the entry's; members' sessions are not listed.
    assert [s.session_id for s in listed.sessions] == [sid]
    # Attribution: each message is labelled, hand-offs are tool calls, member tool ids are namespaced.
    said = client.text()
    assert said.index("**coder:** ") < said.index("CODE-DONE") < said.index("**reviewer:** ") < said.index("REVIEW:")
    assert said.index("REVIEW:") < said.index("**tester:** ") < said.index("TESTS: pass")
    shown = titles(client)
    assert ("coder → reviewer", "in_progress") in shown and ("reviewer → tester", "in_progress") in shown
    assert shown.index(("coder → reviewer", "completed")) > shown.index(("reviewer → tester", "completed"))
    calls = {u.tool_call_id: u.title for u in client.of("tool_call")}
    assert calls["call_1"] == "coder: lookup" and calls["reviewer/call_1"].startswith("reviewer: ")
    # The reviewer's editor read went out for the editor's session id, not the reviewer's own.
    assert [session for session, _ in client.reads] == [sid]
    assert client.of("usage_update") and all(u.size == 128_000 for u in client.of("usage_update"))
    assert [u.title for u in client.of("session_info_update")] == ["write add"]
    # The blackboard is shared with the reviewer; the coder's private context key is not.
    boards = [entry for entry in read_log(log) if entry["event"] == "board"]
    assert boards == [
        {"event": "board", "session": boards[0]["session"], "blackboard": {"coder_turns": 1}, "private": None}
    ]


async def test_cancel_mid_chain_stops_the_whole_graph(crow_home, tmp_path, monkeypatch):
    reviewing = anyio.Event()

    def slow_review(request: dict) -> Reply:
        reviewing.set()
        return Reply(text="slow review", first_delay=30)

    scripts = {
        "coder": [Reply(text="CODE-DONE")],
        "reviewer": [slow_review, Reply(text="REVIEW-2")],
        "tester": [Reply(text="TESTS")],
    }
    client = RecordingClient()
    models = functions(**scripts)
    async with in_process(client, "build", crow_home, models, monkeypatch) as conn:
        with anyio.fail_after(60):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            async with anyio.create_task_group() as group:
                result = {}

                async def run() -> None:
                    result["first"] = await conn.prompt(session_id=sid, prompt=[text("go")])

                group.start_soon(run)
                await client.wait_for(lambda c: ("coder → reviewer", "in_progress") in titles(c))
                await reviewing.wait()  # the reviewer's model call is under way
                await conn.cancel(session_id=sid)
            assert result["first"].stop_reason == "cancelled"
            assert len(models["reviewer"].requests) == 1 and models["tester"].requests == []
            assert ("coder → reviewer", "failed") in titles(client)

            # The graph stays usable: the next prompt runs the whole chain again.
            models["coder"].add(Reply(text="CODE-2"))
            second = await conn.prompt(session_id=sid, prompt=[text("again")])
    assert second.stop_reason == "end_turn"
    assert last_user(models["reviewer"].requests[-1]) == "CODE-2"
    assert last_user(models["tester"].requests[-1]) == "REVIEW-2"


async def test_load_restores_and_replays_the_whole_graph(crow_home, tmp_path):
    log = tmp_path / "multi.jsonl"
    env = {"MULTI_LOG": str(log)}
    first_client = FsClient()
    async with scripted(**chain_scripts()) as models:
        async with serve(first_client, "build", crow_home, models, env=env, capabilities=FS_CAPS) as conn:
            with anyio.fail_after(60):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                await conn.prompt(session_id=sid, prompt=[text("write add")])

        models["coder"].add(Reply(text="CODE-2"))
        models["reviewer"].add(Reply(text="REVIEW-2"))
        models["tester"].add(Reply(text="TESTS-2"))
        client = FsClient()
        async with serve(client, "build", crow_home, models, env=env, capabilities=FS_CAPS) as conn:
            with anyio.fail_after(60):
                await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                replayed = list(client.updates)
                second = await conn.prompt(session_id=sid, prompt=[text("more")])

    # The replay: the user's message once, every agent's words labelled, hand-offs as tool calls.
    kinds = [u.session_update for u in replayed]
    users = [u.content.text for u in replayed if u.session_update == "user_message_chunk"]
    assert users == ["write add"]
    said = "".join(u.content.text for u in replayed if u.session_update == "agent_message_chunk")
    assert said.index("**coder:** ") < said.index("CODE-DONE") < said.index("**reviewer:** REVIEW:")
    assert said.index("REVIEW:") < said.index("**tester:** TESTS: pass")
    calls = [u for u in replayed if u.session_update == "tool_call"]
    handoffs = [(u.title, u.status, u.content[0].content.text) for u in calls if "→" in u.title]
    assert handoffs == [
        ("coder → reviewer", "completed", "CODE-DONE: wrote add()"),
        ("reviewer → tester", "completed", "REVIEW: add() is fine"),
    ]
    assert "tool_call" in kinds and kinds.index("user_message_chunk") == 0

    # Every member's own history was restored: each model sees its earlier turn.
    assert second.stop_reason == "end_turn"
    assert last_user(models["reviewer"].requests[-1]) == "CODE-2"
    assert "CODE-DONE: wrote add()" in all_text(models["reviewer"].requests[-1])
    assert "REVIEW: add() is fine" in all_text(models["tester"].requests[-1])
    assert "TOOL-OUTPUT-k1" in all_text(models["coder"].requests[-1])
    # The shared blackboard survived the restart, and is still shared.
    boards = [entry["blackboard"] for entry in read_log(log) if entry["event"] == "board"]
    assert boards == [{"coder_turns": 1}, {"coder_turns": 2}]


async def test_members_updates_wait_for_the_editor_to_know_the_session(crow_home, tmp_path):
    """Each member reports its broken MCP server at session start: after the response, once each, attributed."""
    broken = McpServerStdio(name="broken", command=str(tmp_path / "no-such-server"), args=[], env=[])
    client = FsClient()
    async with scripted(**chain_scripts()) as models, serve(client, "build", crow_home, models) as conn:
        with anyio.fail_after(60):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[broken])).session_id
            assert client.updates == []  # nothing arrived before the session/new response
            await client.wait_for(lambda c: len([t for t, _ in titles(c) if "broken" in t]) == 3)
            await client.wait_for(lambda c: c.of("available_commands_update"))
            await anyio.sleep(0.3)
    failures = sorted(t for t, s in titles(client) if "broken" in t and s == "failed")
    assert failures == [f"{name}: MCP server 'broken' is unavailable" for name in ("coder", "reviewer", "tester")]
    assert len(client.of("available_commands_update")) == 1  # the entry's: `/` goes to the entry
    assert client.update_sessions == {sid}


async def test_unknown_session_load_is_an_error(crow_home, tmp_path, monkeypatch):
    from acp import RequestError

    async with in_process(RecordingClient(), "build", crow_home, functions(**chain_scripts()), monkeypatch) as conn:
        with anyio.fail_after(30), pytest.raises(RequestError) as error:
            await conn.load_session(cwd=str(tmp_path), session_id="no-such-session", mcp_servers=[])
    assert error.value.code == -32002


async def test_delete_removes_every_members_session_of_the_graph(crow_home, tmp_path, monkeypatch):
    from acp import RequestError

    from crow_acp.store.sqlite import SqliteStore

    async with in_process(RecordingClient(), "build", crow_home, functions(**chain_scripts()), monkeypatch) as conn:
        with anyio.fail_after(30):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=[text("write add")])
            store = SqliteStore(crow_home / "sessions.db")
            try:
                record = await store.get(sid)
                assert record is not None
                members = set(record.data["context"]["graph_sessions"].values())
                assert len(members) == 3 and all([await store.get(m) for m in members])
                await conn.delete_session(session_id=sid)
                assert [await store.get(m) for m in members] == [None, None, None]
            finally:
                await store.close()
            with pytest.raises(RequestError) as gone:
                await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
            assert gone.value.code == -32002
