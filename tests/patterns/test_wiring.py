"""Bridge wiring in Python: add_agent_callback copies, chain() wires exactly, cycles are refused."""

from __future__ import annotations

import anyio
import pytest

from crow.patterns import add_agent_callback, agent_bridge, chain
from crow.patterns.bridge import AgentBridge
from crow_acp import AcpAgent, CrowCallbacks, MultiAgent, load_config
from crow_acp.testing import Reply, ScriptedModel


def noop(session, **_):
    return None


def bridges(agent: AcpAgent) -> list[str]:
    return [cb.next_agent.name for cb in agent.callbacks.end_turn if isinstance(cb, AgentBridge)]


def test_add_agent_callback_returns_a_copy_and_leaves_its_input_alone():
    base = CrowCallbacks(begin_session=[noop], end_turn=[noop])
    lists_before = {name: getattr(base, name) for name in ("begin_session", "pre_request", "post_response", "end_turn")}
    b = AcpAgent(name="b")
    added = add_agent_callback(base, b)
    assert base.end_turn == [noop] and base.begin_session == [noop]
    assert all(getattr(base, name) is lists for name, lists in lists_before.items())
    assert added.end_turn[:1] == [noop] and added.end_turn[1].next_agent is b
    assert added.end_turn is not base.end_turn and added.begin_session is not base.begin_session
    # The trap the helper avoids: model_copy() shares the lists, so appending to the copy mutates the input.
    shallow = base.model_copy()
    assert shallow.end_turn is base.end_turn


def test_chain_wires_exactly_a_to_b_to_c_and_replaces_old_bridges():
    a, b, c = AcpAgent(name="a"), AcpAgent(name="b"), AcpAgent(name="c")
    b.set_callbacks(add_agent_callback(b.callbacks, a))  # a stale bridge the chain must not keep
    multi = chain(a, b, c)
    assert (bridges(a), bridges(b), bridges(c)) == (["b"], ["c"], [])
    assert [m.name for m in multi.members] == ["a", "b", "c"] and multi.entry is a


def test_cycles_and_self_bridges_are_refused():
    a, b = AcpAgent(name="a"), AcpAgent(name="b")
    with pytest.raises(ValueError, match="twice"):
        chain(a, b, a)
    a.set_callbacks(add_agent_callback(CrowCallbacks(), b))
    b.set_callbacks(add_agent_callback(CrowCallbacks(), a))
    with pytest.raises(ValueError, match="cycle: a → b → a"):
        MultiAgent(entry_agent=a)
    a.set_callbacks(CrowCallbacks(end_turn=[agent_bridge(a)]))
    with pytest.raises(ValueError, match="bridges to itself"):
        MultiAgent(entry_agent=a)


def test_members_with_one_name_are_told_apart():
    first, second = AcpAgent(name="crow"), AcpAgent(name="crow")
    multi = chain(first, second)
    assert [m.name for m in multi.members] == ["crow", "crow-2"]


@pytest.mark.anyio
async def test_a_cycle_built_without_multiagent_is_refused_at_run_time(tmp_path, monkeypatch):
    """a → b → a in plain Python: b's bridge back to a (still in its turn) is refused, not a deadlock."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    async with (
        ScriptedModel(default=Reply(text="A-SAYS")) as model_a,
        ScriptedModel(default=Reply(text="B-SAYS")) as model_b,
    ):

        def agent(name: str, model: ScriptedModel) -> AcpAgent:
            config = load_config(home=tmp_path / "home", models={"m": {"base_url": model.base_url}}, model="m")
            return AcpAgent(config, name=name)

        a, b = agent("a", model_a), agent("b", model_b)
        a.set_callbacks(add_agent_callback(CrowCallbacks(), b))
        b.set_callbacks(add_agent_callback(CrowCallbacks(), a))
        with anyio.fail_after(30):
            sid = (await a.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            response = await a.prompt(prompt=[{"type": "text", "text": "hi"}], session_id=sid)
            b_sid = a.sessions[sid].context["graph_sessions"]["b"]  # created lazily, remembered by a
            again = await a.prompt(prompt=[{"type": "text", "text": "again"}], session_id=sid)
        b_sessions = list(b.sessions)
        await a.shutdown()
        await b.shutdown()
    assert response.stop_reason == "end_turn" and again.stop_reason == "end_turn"
    assert len(model_a.requests) == 2 and len(model_b.requests) == 2
    assert model_b.requests[0]["messages"][-1]["content"] == "A-SAYS"
    assert b_sessions == [b_sid]  # the second hand-off reused b's session
    assert [m["content"] for m in model_b.requests[1]["messages"] if m["role"] == "user"] == ["A-SAYS", "A-SAYS"]
