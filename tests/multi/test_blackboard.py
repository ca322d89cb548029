"""The shared blackboard of a MultiAgent: every way of changing a shared key reaches every member and the store.

In-process: MultiAgent's ACP handlers are called directly (no editor is needed to open sessions),
and the store is read back through a second SQLite connection, as another process would.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.helpers import RecordingClient, prompt_until_killed, run_crow
from support.multi_support import AGENTS, multi_env, scripted
from support.records import read_log

from crow_acp import AcpAgent, MultiAgent
from crow_acp.config import Config
from crow_acp.multi import Blackboard, MemberContext
from crow_acp.plugin.blackboard import NotJsonError
from crow_acp.testing import Reply

pytestmark = pytest.mark.anyio
SHARED = {"notes", "plan", "blackboard", "graph_sessions"}


def make(tmp_path: Any) -> MultiAgent:
    config = Config(home=tmp_path / "home")
    a, b, c = (AcpAgent(config, name=name) for name in "abc")
    return MultiAgent(entry_agent=a, members=[b, c], shared_keys=["notes"])


async def opened(tmp_path: Any) -> tuple[MultiAgent, dict[str, Any], str]:
    multi = make(tmp_path)
    sid = (await multi.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
    graph = multi.graph_of(sid)
    assert graph is not None
    contexts = {name: graph.agents[name].sessions[member_sid].context for name, member_sid in graph.sessions.items()}
    return multi, contexts, sid


async def stored(tmp_path: Any, multi: MultiAgent, sid: str) -> dict[str, dict]:
    """Each member's context as the database holds it (once the writes made so far landed), read
    through a connection of its own."""
    graph = multi.graph_of(sid)
    assert graph is not None
    for agent in graph.agents.values():
        await agent.store.flush()
    db = sqlite3.connect(tmp_path / "home" / "sessions.db")
    out = {}
    for name, member_sid in graph.sessions.items():
        row = db.execute("SELECT data FROM sessions WHERE id = ?", (member_sid,)).fetchone()
        assert row is not None
        out[name] = json.loads(row[0]).get("context", {})
    db.close()
    return out


def shared_view(context: dict) -> dict:
    return {key: value for key, value in context.items() if key in SHARED}


async def check_everywhere(
    tmp_path: Any, multi: MultiAgent, sid: str, contexts: dict[str, Any], expected: dict, label: str = ""
) -> None:
    on_disk = await stored(tmp_path, multi, sid)
    for name in "abc":
        assert shared_view(contexts[name]) == expected, f"{label}: {name} in memory"
        assert shared_view(on_disk[name]) == expected, f"{label}: {name} in the store"


MUTATIONS = [
    ("ctx[k] = v", lambda ctx: ctx.__setitem__("notes", 1), {"notes": 1}),
    ("|=", lambda ctx: ctx.__ior__({"notes": 2, "plan": {"steps": []}}), {"notes": 2, "plan": {"steps": []}}),
    (
        "update",
        lambda ctx: ctx.update({"notes": 3}, blackboard="x"),
        {"notes": 3, "plan": {"steps": []}, "blackboard": "x"},
    ),
    (
        "setdefault (new)",
        lambda ctx: ctx.pop("blackboard") and ctx.setdefault("blackboard", "y"),
        {"notes": 3, "plan": {"steps": []}, "blackboard": "y"},
    ),
    (
        "setdefault (kept)",
        lambda ctx: ctx.setdefault("blackboard", "z"),
        {"notes": 3, "plan": {"steps": []}, "blackboard": "y"},
    ),
    ("del", lambda ctx: ctx.__delitem__("notes"), {"plan": {"steps": []}, "blackboard": "y"}),
    ("pop", lambda ctx: ctx.pop("plan"), {"blackboard": "y"}),
    ("pop with default", lambda ctx: ctx.pop("plan", None), {"blackboard": "y"}),
]


async def test_every_mutation_of_a_shared_key_reaches_every_member_and_the_store(tmp_path):
    multi, contexts, sid = await opened(tmp_path)
    sessions = dict(contexts["a"]["graph_sessions"])
    assert sorted(sessions) == ["a", "b", "c"]
    for index, (label, mutate, expected) in enumerate(MUTATIONS):
        member = "bca"[index % 3]  # every member changes it in turn
        mutate(contexts[member])
        await check_everywhere(tmp_path, multi, sid, contexts, {"graph_sessions": sessions, **expected}, label)
    assert all(isinstance(context, MemberContext) for context in contexts.values())


async def test_private_keys_stay_with_their_member_and_clear_empties_the_shared_ones_everywhere(tmp_path):
    multi, contexts, sid = await opened(tmp_path)
    contexts["b"] |= {"mine": 1, "notes": "shared"}
    contexts["c"]["theirs"] = 2
    assert "mine" in contexts["b"] and "mine" not in contexts["a"] and "mine" not in contexts["c"]
    assert contexts["a"]["notes"] == contexts["c"]["notes"] == "shared"
    assert contexts["b"].popitem() == ("notes", "shared")  # the last key set in b
    assert "notes" not in contexts["a"] and "notes" not in (await stored(tmp_path, multi, sid))["c"]
    contexts["c"].clear()
    await check_everywhere(tmp_path, multi, sid, contexts, {})
    assert contexts["b"]["mine"] == 1, "b's private key survives c's clear()"
    assert dict(contexts["c"]) == {}


async def test_the_blackboard_object_and_set_context_share_and_persist_too(tmp_path):
    multi, contexts, sid = await opened(tmp_path)
    graph = multi.graph_of(sid)
    assert graph is not None and isinstance(graph.blackboard, Blackboard)
    graph.blackboard["notes"] = ["from the board"]
    assert contexts["c"]["notes"] == ["from the board"]
    graph.agents["c"].access(graph.sessions["c"]).set_context("notes", ["from c"])
    assert graph.blackboard["notes"] == ["from c"] and (await stored(tmp_path, multi, sid))["a"]["notes"] == ["from c"]
    with pytest.raises(KeyError, match="not a shared key"):
        graph.blackboard["private"] = 1
    del graph.blackboard["notes"]
    assert all("notes" not in context for context in contexts.values())


async def test_a_reloaded_graph_gets_the_stored_blackboard_back(tmp_path):
    multi, contexts, sid = await opened(tmp_path)
    contexts["c"]["notes"] = {"kept": True}
    contexts["c"]["mine"] = "c only"
    multi.graph_of(sid).save()
    await multi.shutdown()
    again = make(tmp_path)
    await again.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
    graph = again.graph_of(sid)
    assert graph is not None and graph.blackboard["notes"] == {"kept": True}
    reloaded = graph.agents["b"].sessions[graph.sessions["b"]].context
    assert reloaded["notes"] == {"kept": True} and "mine" not in reloaded
    reloaded["notes"] = "after reload"
    assert graph.agents["a"].access(sid).get_context("notes") == "after reload"
    await again.shutdown()


NESTED = [
    ("bb[k] = v", lambda bb: bb.__setitem__("x", 1), {"x": 1}),
    (
        "nested append",
        lambda bb: bb.setdefault("findings", []).append({"file": "a.py"}),
        {"x": 1, "findings": [{"file": "a.py"}]},
    ),
    (
        "nested dict",
        lambda bb: bb["findings"][0].__setitem__("line", 3),
        {"x": 1, "findings": [{"file": "a.py", "line": 3}]},
    ),
    (
        "|=",
        lambda bb: bb.__ior__({"d": {"k": []}}),
        {"x": 1, "findings": [{"file": "a.py", "line": 3}], "d": {"k": []}},
    ),
    (
        "deep +=",
        lambda bb: bb["d"]["k"].__iadd__(["v"]),
        {"x": 1, "findings": [{"file": "a.py", "line": 3}], "d": {"k": ["v"]}},
    ),
    ("del", lambda bb: bb.__delitem__("x"), {"findings": [{"file": "a.py", "line": 3}], "d": {"k": ["v"]}}),
    ("pop nested", lambda bb: bb["findings"].pop(), {"findings": [], "d": {"k": ["v"]}}),
    ("pop", lambda bb: bb.pop("d"), {"findings": []}),
]


async def test_every_nested_change_of_session_blackboard_is_shared_and_stored_at_once(tmp_path):
    multi, _, sid = await opened(tmp_path)
    graph = multi.graph_of(sid)
    assert graph is not None
    access = {name: graph.agents[name].access(member_sid) for name, member_sid in graph.sessions.items()}
    board = access["b"].blackboard
    assert board is access["b"].get_context("blackboard") is graph.agents["b"].access(graph.sessions["b"]).blackboard
    for index, (label, mutate, expected) in enumerate(NESTED):
        mutate(access["abc"[index % 3]].blackboard)  # every member writes in turn
        on_disk = await stored(tmp_path, multi, sid)
        for name in "abc":
            assert access[name].get_context("blackboard") == expected, f"{label}: {name} in memory"
            assert on_disk[name]["blackboard"] == expected, f"{label}: {name} in the store"
    await multi.shutdown()


async def test_a_value_that_is_not_json_is_refused_when_written(tmp_path):
    multi, _, sid = await opened(tmp_path)
    board = multi.graph_of(sid).access("a").blackboard
    board["findings"] = []
    mine = {"kept": "a copy"}
    board["mine"] = mine
    mine["kept"] = "changed later"  # the caller's own dict is not the board's
    for write, message in [
        (lambda: board["findings"].append({1, 2}), r"blackboard\['findings'\]\[0\] is a set, which is not JSON"),
        (lambda: board.__setitem__("when", object()), r"blackboard\['when'\] is a object"),
        (lambda: board.update({3: "x"}), "JSON keys are strings"),
        (lambda: board["findings"].append(float("nan")), "JSON cannot hold"),
    ]:
        with pytest.raises(NotJsonError, match=message):
            write()
    assert board == {"findings": [], "mine": {"kept": "a copy"}}
    assert (await stored(tmp_path, multi, sid))["c"]["blackboard"] == {"findings": [], "mine": {"kept": "a copy"}}
    await multi.shutdown()


async def test_nested_findings_survive_sigkill_while_the_next_member_streams(crow_home, tmp_path):
    """A chain whose first member left nested findings on the blackboard, killed while the second streams."""
    scripts = {
        "coder": [Reply(text="CODE-DONE: found one issue")],
        # The role chunk and the first of three text chunks, then the stream holds: the kill lands there.
        "reviewer": [Reply(text="Reviewing the findings now, carefully.", chunks=3, hold_after=2)],
    }
    log = tmp_path / "multi.jsonl"
    agent = ("--agent", f"{AGENTS}:build_findings")
    async with scripted(**scripts) as models:
        env = multi_env(crow_home, models, MULTI_LOG=str(log))
        first = RecordingClient()
        async with run_crow(first, env, *agent) as (conn, proc):
            with anyio.fail_after(60):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                streaming = lambda c: c.text().partition("**reviewer:** ")[2]  # noqa: E731  the reviewer's first words
                await prompt_until_killed(conn, proc, first, sid, "find issues", streaming)
        assert proc.returncode == -9
        assert "carefully." not in first.text()  # killed mid-stream

        async with run_crow(RecordingClient(), env, *agent) as (conn, _):
            with anyio.fail_after(60):
                await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])

    expected = {"findings": [{"file": "add.py", "issue": "no test"}], "summary": {"count": 1}, "status": "reviewing"}
    assert stored_board(crow_home, sid) == expected
    assert [entry["blackboard"] for entry in read_log(log) if entry["event"] == "loaded board"] == [expected]


def stored_board(home: Path, sid: str) -> Any:
    db = sqlite3.connect(home / "sessions.db")
    row = db.execute("SELECT data FROM sessions WHERE id = ?", (sid,)).fetchone()
    db.close()
    return json.loads(row[0])["context"].get("blackboard")
