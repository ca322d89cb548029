"""The shared blackboard of a MultiAgent: every way of changing a shared key reaches every member and the store.

In-process: MultiAgent's ACP handlers are called directly (no editor is needed to open sessions),
and the store is read back through a second SQLite connection, as another process would.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from crow_acp import AcpAgent, MultiAgent
from crow_acp.config import Config
from crow_acp.multi import Blackboard, MemberContext

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
    ("update", lambda ctx: ctx.update({"notes": 3}, blackboard="x"), {"notes": 3, "plan": {"steps": []}, "blackboard": "x"}),
    ("setdefault (new)", lambda ctx: ctx.pop("blackboard") and ctx.setdefault("blackboard", "y"),
     {"notes": 3, "plan": {"steps": []}, "blackboard": "y"}),
    ("setdefault (kept)", lambda ctx: ctx.setdefault("blackboard", "z"), {"notes": 3, "plan": {"steps": []}, "blackboard": "y"}),
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
