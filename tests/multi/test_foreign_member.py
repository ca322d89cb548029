"""Foreign members: another ACP agent (tests/agents/foreign_acp_agent.py, on the `acp` SDK) as a node of a graph.

In process: crow's graph with FunctionModels and a RecordingClient as the editor; the foreign member is
a real process crow starts under its guard, speaking ACP over stdio.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from acp import RequestError
from support import multi_support
from support.helpers import RecordingClient, text
from support.multi_support import functions, titles

from crow_acp.testing import Reply

pytestmark = pytest.mark.anyio
GRAPHS = Path(__file__).parents[1] / "agents" / "foreign_graphs.py"


def calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def run_graph(client, factory, home, models, monkeypatch, log, **env):
    monkeypatch.setattr(multi_support, "AGENTS", GRAPHS)
    return multi_support.in_process(client, factory, home, models, monkeypatch, env={"FOREIGN_LOG": str(log), **env})


async def ask(conn, tmp_path, words, sid=None):
    with anyio.fail_after(60):
        sid = sid or (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        return sid, await conn.prompt(session_id=sid, prompt=[text(words)])


async def test_a_foreign_member_takes_the_hand_off_and_hands_its_reply_on(crow_home, tmp_path, monkeypatch):
    log = tmp_path / "member.jsonl"
    models = functions(coder=[Reply(text="please review")], reviewer=[Reply(text="LGTM")])
    client = RecordingClient()
    async with run_graph(client, "build_chain", crow_home, models, monkeypatch, log) as conn:
        _, response = await ask(conn, tmp_path, "write it")
    assert response.stop_reason == "end_turn"
    prompts = [c for c in calls(log) if c["event"] == "prompt"]
    assert [p["text"] for p in prompts] == ["please review"]
    assert [c["cwd"] for c in calls(log) if c["event"] == "new_session"] == [str(tmp_path)]
    # The member's reply reached the editor attributed, and the reviewer got it as its hand-off.
    shown = client.text()
    assert shown.index("**outsider:** ") < shown.index("ECHO: please review") < shown.index("LGTM")
    assert multi_support.last_user(models["reviewer"].requests[0]) == "ECHO: please review"
    assert ("coder → outsider", "completed") in titles(client) and ("outsider → reviewer", "completed") in titles(
        client
    )


@pytest.mark.parametrize(
    ("editor_answer", "member_sees"),
    [("yes", "ALLOWED:yes"), ("no", "ALLOWED:no"), ("allow_once", "REJECTED"), ("cancelled", "REJECTED")],
)
async def test_its_permission_question_goes_to_the_editor_and_fails_closed(
    crow_home, tmp_path, monkeypatch, editor_answer, member_sees
):
    """An option the member did not offer (allow_once here) or a cancel is a rejection, never an allow."""
    models = functions(coder=[Reply(text="ASK now")], reviewer=[Reply(text="ok")])
    client = RecordingClient(permission=editor_answer)
    async with run_graph(client, "build_chain", crow_home, models, monkeypatch, tmp_path / "m.jsonl") as conn:
        await ask(conn, tmp_path, "go")
    [(call, options)] = client.permission_requests
    assert call.tool_call_id == "outsider/call_1" and call.title == "outsider: Delete everything"
    assert [o.option_id for o in options] == ["yes", "no"]
    assert member_sees in client.text()


async def test_cancel_reaches_the_member_as_session_cancel(crow_home, tmp_path, monkeypatch):
    log = tmp_path / "m.jsonl"
    models = functions(coder=[Reply(text="HANG")], reviewer=[Reply(text="never")])
    client = RecordingClient()
    async with run_graph(client, "build_chain", crow_home, models, monkeypatch, log) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        async with anyio.create_task_group() as group:
            answers = []

            async def prompt() -> None:
                answers.append(await conn.prompt(session_id=sid, prompt=[text("go")]))

            group.start_soon(prompt)
            await client.wait_for(lambda c: "HANGING" in c.text())
            await conn.cancel(session_id=sid)
        # The member is still there for the next prompt.
        models["coder"].add(Reply(text="after the cancel"))
        _, again = await ask(conn, tmp_path, "again", sid)
    assert answers[0].stop_reason == "cancelled" and again.stop_reason == "end_turn"
    events = [c["event"] for c in calls(log)]
    assert events.index("cancel") > events.index("prompt") and len(models["reviewer"].requests) == 1
    assert "ECHO: after the cancel" in client.text()


async def test_a_member_that_crashes_mid_turn_fails_its_node_and_the_next_turn_restarts_it(
    crow_home, tmp_path, monkeypatch
):
    log = tmp_path / "m.jsonl"
    models = functions(coder=[Reply(text="CRASH"), Reply(text="hello again")], reviewer=[Reply(text="fine")])
    client = RecordingClient()
    async with run_graph(client, "build_chain", crow_home, models, monkeypatch, log) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        with pytest.raises(RequestError, match="member outsider failed: exited with status 3"):
            await ask(conn, tmp_path, "go", sid)
        _, second = await ask(conn, tmp_path, "go on", sid)
    assert ("coder → outsider", "failed") in titles(client)
    assert not [r for r in models["reviewer"].requests if "ABOUT TO CRASH" in str(r)]  # the chain stopped there
    assert second.stop_reason == "end_turn" and "ECHO: hello again" in client.text()
    assert len({c["pid"] for c in calls(log) if c["event"] == "initialize"}) == 2


@pytest.mark.parametrize("resumable", [True, False])
async def test_reload_resumes_the_member_session_or_says_it_starts_afresh(crow_home, tmp_path, monkeypatch, resumable):
    log = tmp_path / "m.jsonl"
    env = {"FOREIGN_RESUME": "1"} if resumable else {}
    models = functions(coder=[Reply(text="one")], reviewer=[Reply(text="r1")])
    async with run_graph(RecordingClient(), "build_chain", crow_home, models, monkeypatch, log, **env) as conn:
        sid, _ = await ask(conn, tmp_path, "go")
    client = RecordingClient()
    models = functions(coder=[Reply(text="two")], reviewer=[Reply(text="r2")])
    async with run_graph(client, "build_chain", crow_home, models, monkeypatch, log, **env) as conn:
        await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
        await ask(conn, tmp_path, "go on", sid)
    [first] = [c["session"] for c in calls(log) if c["event"] == "new_session"][:1]
    prompted = [c["session"] for c in calls(log) if c["event"] == "prompt"]
    if resumable:
        assert [c["session"] for c in calls(log) if c["event"] == "resume_session"] == [first]
        assert prompted == [first, first] and "starts afresh" not in client.text()
    else:
        assert prompted[0] == first and prompted[1] != first
        assert "outsider cannot resume its earlier session: it starts afresh." in client.text()
    assert "ECHO: one" in client.text()  # the load replayed the member's stored reply


async def test_a_member_cannot_write_into_another_session(crow_home, tmp_path, monkeypatch, caplog):
    """An update for a session id that is not the member's own (here: the editor's) is dropped and logged."""
    editor_sid: list[str] = []
    models = functions(coder=lambda request: Reply(text=f"FOREIGN {editor_sid[0]}"), reviewer=[Reply(text="ok")])
    client = RecordingClient()
    async with run_graph(client, "build_chain", crow_home, models, monkeypatch, tmp_path / "m.jsonl") as conn:
        editor_sid.append((await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id)
        await ask(conn, tmp_path, "go", editor_sid[0])
    assert "OWN" in client.text() and "SMUGGLED" not in client.text()
    assert "dropped an update for a session that is not its own" in caplog.text


async def test_a_flood_is_bounded_and_the_turn_goes_on(crow_home, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr("crow_acp.multi.foreign.relay.TurnText.MAX_UPDATES", 300)
    models = functions(coder=[Reply(text="FLOOD 2000")], reviewer=[Reply(text="REVIEWED")])
    client = RecordingClient()
    async with run_graph(client, "build_chain", crow_home, models, monkeypatch, tmp_path / "m.jsonl") as conn:
        _, response = await ask(conn, tmp_path, "go")
    assert response.stop_reason == "end_turn" and "REVIEWED" in client.text()
    assert client.text().count("x") == 300
    assert "member flooded its turn" in caplog.text


@pytest.mark.parametrize(("word", "reason"), [("GARBAGE", "malformed JSON-RPC: Parse error"), ("BIG", None)])
async def test_hostile_lines_fail_the_node_or_are_dropped(crow_home, tmp_path, monkeypatch, word, reason):
    """A line that is not JSON-RPC ends the member's link with the reason; a line past the size limit never
    reaches crow's memory whole (the guard's relay drops it) and the turn goes on."""
    models = functions(coder=[Reply(text=word)], reviewer=[Reply(text="REVIEWED")])
    client = RecordingClient()
    async with run_graph(client, "build_chain", crow_home, models, monkeypatch, tmp_path / "m.jsonl") as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        if reason:
            with pytest.raises(RequestError, match=f"member outsider failed: {reason}"):
                await ask(conn, tmp_path, "go", sid)
        else:
            await ask(conn, tmp_path, "go", sid)
    if reason is None:
        assert "AFTER BIG" in client.text() and "BBBB" not in client.text() and "REVIEWED" in client.text()


async def test_a_member_declared_in_config_joins_a_chain_by_name(crow_home, tmp_path, monkeypatch):
    import sys

    log = tmp_path / "named.jsonl"
    agent = GRAPHS.with_name("foreign_acp_agent.py")
    (crow_home / "config.toml").write_text(
        f"[agents.helper]\ncommand = [{json.dumps(sys.executable)}, {json.dumps(str(agent))}]\n"
        f"env = {{ FOREIGN_LOG = {json.dumps(str(log))} }}\n"
    )
    models = functions(coder=[Reply(text="from config")])
    client = RecordingClient()
    async with run_graph(
        client, "named_member_chain", crow_home, models, monkeypatch, tmp_path / "unused.jsonl"
    ) as conn:
        _, response = await ask(conn, tmp_path, "go")
    assert response.stop_reason == "end_turn" and "**helper:** ECHO: from config" in client.text()
    assert [c["text"] for c in calls(log) if c["event"] == "prompt"] == ["from config"]


async def test_another_crow_acp_is_a_member(crow_home, tmp_path, monkeypatch):
    """A second crow, with its own home and scripted model, as the chain's second member."""
    from crow_acp.testing import ScriptedModel

    models = functions(coder=[Reply(text="summarize the plan")])
    client = RecordingClient()
    async with ScriptedModel([Reply(text="CROWMATE SAYS HI")]) as mate:
        env = {"MEMBER_HOME": str(tmp_path / "mate-home"), "MEMBER_MODEL_URL": mate.base_url}
        async with run_graph(
            client, "build_crow_member", crow_home, models, monkeypatch, tmp_path / "m", **env
        ) as conn:
            _, response = await ask(conn, tmp_path, "go")
    assert response.stop_reason == "end_turn"
    assert multi_support.last_user(mate.requests[0]) == "summarize the plan"
    assert "**crowmate:** CROWMATE SAYS HI" in client.text()


@pytest.mark.parametrize("token", ["right", "wrong"])
async def test_a_crow_serve_is_a_remote_member(crow_home, tmp_path, monkeypatch, token):
    """remote_member over WebSocket to a real `crow serve` on 127.0.0.1; a wrong token fails the node, saying why."""
    from support.helpers import crow_env
    from support.serve_support import crow_serve

    from crow_acp.testing import ScriptedModel

    models = functions(coder=[Reply(text="over the wire")])
    client = RecordingClient()
    async with ScriptedModel([Reply(text="SERVED REPLY")]) as far_model:
        far_env = crow_env(tmp_path / "far-home", far_model.base_url)
        async with crow_serve(far_env, token="s3cret-token") as served:
            env = {"FOREIGN_URL": served.ws, "FOREIGN_TOKEN": "s3cret-token" if token == "right" else "guess"}
            async with run_graph(client, "build_remote", crow_home, models, monkeypatch, tmp_path / "m", **env) as conn:
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                if token == "wrong":
                    with pytest.raises(RequestError, match=r"did not start: server rejected .* HTTP 403"):
                        await ask(conn, tmp_path, "go", sid)
                    return
                _, response = await ask(conn, tmp_path, "go", sid)
    assert response.stop_reason == "end_turn"
    assert multi_support.last_user(far_model.requests[0]) == "over the wire"
    assert "**remote:** SERVED REPLY" in client.text()


async def test_a_foreign_member_goes_where_a_crow_agent_goes(crow_home, tmp_path, monkeypatch):
    """As the entry of a chain, as a step of sequential, as a branch of parallel."""
    log = tmp_path / "m.jsonl"
    models = functions(reviewer=[Reply(text="R")], coder=[Reply(text="C")], alpha=[Reply(text="A")])
    models["merger"] = functions(merger=[Reply(text="MERGED")])["merger"]
    for factory, words in [("build_first", "entry"), ("build_sequential", "seq"), ("build_parallel", "par")]:
        client = RecordingClient()
        async with run_graph(client, factory, crow_home, models, monkeypatch, log) as conn:
            _, response = await ask(conn, tmp_path, words)
        assert response.stop_reason == "end_turn", factory
    prompts = [c["text"] for c in calls(log) if c["event"] == "prompt"]
    assert prompts[:2] == ["entry", "C"] and "par" in prompts[2] and len(prompts) == 3, prompts
    assert multi_support.last_user(models["reviewer"].requests[0]) == "ECHO: entry"
    assert "MERGED" in client.text() and "ECHO:" in client.text()


async def test_the_member_process_dies_with_crow(crow_home, tmp_path):
    """crow SIGKILLed mid-turn: the member (started under the guard, in its own process group) goes too,
    though it ignores its stdin closing and SIGTERM. Its stderr was in crow.log."""
    import signal

    from support.raw_wire import alive, descendants, eventually, raw_crow

    log = tmp_path / "m.jsonl"
    async with multi_support.scripted(coder=[Reply(text="HANG")], reviewer=[]) as models:
        env = multi_support.multi_env(crow_home, models, FOREIGN_LOG=str(log), FOREIGN_STUBBORN="1")
        async with raw_crow(env, "--agent", f"{GRAPHS}:build_chain") as crow:
            sid = await crow.new_session(str(tmp_path))
            await crow.send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]})
            await eventually(lambda: any(c["event"] == "prompt" for c in calls(log)), 60)
            [member] = {c["pid"] for c in calls(log)}
            assert member in descendants(crow.proc.pid)
            crow_log = crow_home / "logs" / "crow.log"
            await eventually(lambda: "member outsider stderr: foreign member starting" in crow_log.read_text(), 30)
            crow.signal(signal.SIGKILL)
            assert await crow.proc.wait() == -signal.SIGKILL
    await eventually(lambda: not alive(member), 30)


class FilesClient(RecordingClient):
    """An editor that offers fs/*: reads answer FILE:<path>, writes are recorded."""

    def __init__(self, permission: str) -> None:
        super().__init__(permission)
        self.writes: list[str] = []

    async def read_text_file(self, path: str, session_id: str, **_):
        from acp.schema import ReadTextFileResponse

        return ReadTextFileResponse(content=f"FILE:{path}")

    async def write_text_file(self, content: str, path: str, session_id: str, **_):
        self.writes.append(path)


@pytest.mark.parametrize(("offered", "permission"), [(True, "allow"), (True, "reject"), (False, "allow")])
async def test_fs_requests_are_confined_and_a_write_asks_first(crow_home, tmp_path, monkeypatch, offered, permission):
    from acp.schema import ClientCapabilities, FileSystemCapabilities

    inside, outside = tmp_path / "a.txt", "/etc/passwd"
    script = [Reply(text=f"READ {inside}"), Reply(text=f"READ {outside}"), Reply(text=f"WRITE {inside}")]
    models = functions(coder=script, reviewer=lambda request: Reply(text="ok"))
    client = FilesClient(permission)
    fs = FileSystemCapabilities(read_text_file=True, write_text_file=True) if offered else FileSystemCapabilities()
    monkeypatch.setattr(multi_support, "AGENTS", GRAPHS)
    env = {"FOREIGN_LOG": str(tmp_path / "m.jsonl")}
    caps = ClientCapabilities(fs=fs)
    async with multi_support.in_process(client, "build_chain", crow_home, models, monkeypatch, env, caps) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        for words in ("one", "two", "three"):
            await ask(conn, tmp_path, words, sid)
    shown = client.text()
    [init] = [c for c in calls(tmp_path / "m.jsonl") if c["event"] == "initialize"]
    assert init["fs"] == {"read_text_file": offered, "write_text_file": offered, "field_meta": None}
    if not offered:
        assert shown.count("REFUSED:Method not found") == 3 and client.writes == []
        return
    assert f"READ:FILE:{inside}" in shown and "READ REFUSED:Invalid params" in shown
    [(question, _)] = client.permission_requests
    assert question.title == f"outsider: Write {inside}"
    assert client.writes == ([str(inside)] if permission == "allow" else [])
    assert ("WROTE" in shown) == (permission == "allow")


async def test_a_silent_member_fails_its_node_after_member_idle(crow_home, tmp_path, monkeypatch):
    (crow_home / "config.toml").write_text("[timeouts]\nmember_idle = 1\n")
    models = functions(coder=[Reply(text="HANG"), Reply(text="back")], reviewer=[Reply(text="never")])
    client = RecordingClient()
    async with run_graph(client, "build_chain", crow_home, models, monkeypatch, tmp_path / "m.jsonl") as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        with pytest.raises(RequestError, match="member outsider was silent for 1s"):
            await ask(conn, tmp_path, "go", sid)
        _, again = await ask(conn, tmp_path, "go on", sid)  # a new link, the same member session resumed or not
    assert again.stop_reason == "end_turn" and "ECHO: back" in client.text()
    assert len(models["reviewer"].requests) == 1  # the failed turn handed nothing on


@pytest.mark.parametrize("passed", [False, True], ids=["kept", "passed"])
async def test_the_editors_mcp_servers_reach_a_member_only_when_asked(crow_home, tmp_path, monkeypatch, passed):
    """crow starts no MCP server for a foreign member's session (nothing in crow would call it); the
    member gets the editor's servers when `[agents.NAME] mcp_servers = true` says so, never by default."""
    import sys

    from acp.schema import McpServerStdio
    from support import spawn
    from support.helpers import TESTS

    LIVE = TESTS / "mcp_servers" / "live_server.py"

    log, starts = tmp_path / "named.jsonl", tmp_path / "starts"
    agent = GRAPHS.with_name("foreign_acp_agent.py")
    (crow_home / "config.toml").write_text(
        f"[agents.helper]\ncommand = [{json.dumps(sys.executable)}, {json.dumps(str(agent))}]\n"
        f"env = {{ FOREIGN_LOG = {json.dumps(str(log))} }}\nmcp_servers = {json.dumps(passed)}\n"
    )
    live = McpServerStdio(name="live", command=spawn.python(), args=[str(LIVE), "--starts", str(starts)], env=[])
    models = functions(coder=[Reply(text="from config")])
    async with run_graph(
        RecordingClient(), "named_member_chain", crow_home, models, monkeypatch, tmp_path / "x"
    ) as conn:
        with anyio.fail_after(60):
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[live])).session_id
            assert (await conn.prompt(session_id=sid, prompt=[text("go")])).stop_reason == "end_turn"
            await conn.close_session(session_id=sid)
    assert [c["mcp"] for c in calls(log) if c["event"] == "new_session"] == [["live"] if passed else []]
    assert len(starts.read_text().splitlines()) == 1, "the coder's server only, not one for the member's session"


def test_a_member_takes_only_the_mcp_transports_it_advertised():
    from acp.schema import AgentCapabilities, HttpMcpServer, McpCapabilities, McpServerStdio, SseMcpServer

    from crow_acp.multi.foreign.link import Link

    servers = [
        McpServerStdio(name="s", command="x", args=[], env=[]),
        HttpMcpServer(name="h", url="http://127.0.0.1:1/mcp", headers=[], type="http"),
        SseMcpServer(name="e", url="http://127.0.0.1:1/sse", headers=[], type="sse"),
    ]
    link = Link("m", deliver=None)  # type: ignore[arg-type]
    link.capabilities = AgentCapabilities()
    assert [s.name for s in link.servers_taken(servers)] == ["s"]
    link.capabilities = AgentCapabilities(mcp_capabilities=McpCapabilities(http=True))
    assert [s.name for s in link.servers_taken(servers)] == ["s", "h"]
