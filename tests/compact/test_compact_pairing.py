"""Compaction never breaks tool-call pairing, checked as strictly as the strictest servers do.

Histories are generated the way crow's loop writes them: parallel tool calls answered in any
order, tool errors, cancelled and interrupted calls, reasoning, skill injections, call ids that
repeat across turns, earlier compaction summaries, and a turn still in flight (an assistant
message whose calls have no results yet, which is what post_response sees).
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from support.helpers import assert_strict_pairing, in_process

from crow_acp.acp.agent import AcpAgent
from crow_acp.acp.updates.notices import COMPACTED_MARKER
from crow_acp.acp.updates.shapes import replay_updates
from crow_acp.config import Config, ModelProfile
from crow_acp.core.session import SUMMARY_ACK, SUMMARY_PREFIX
from crow_acp.core.session_view import SessionView
from crow_acp.history import EntryMeta, StoredMessage
from crow_acp.testing import Reply, ScriptedModel
from crow_compact import default_compact
from crow_compact.cut import head_size, plan_cut, safe_cuts
from crow_compact.summary import MARKER
from crow_compact.tokens import CHARS, count_message

old = EntryMeta.from_json  # metadata as rows have always stored it


def history(rng: random.Random) -> list[StoredMessage]:
    """A history as crow's loop records it, possibly stopped mid-turn."""
    entries = [StoredMessage({"role": "system", "content": "You are crow."})] if rng.random() < 0.8 else []
    if rng.random() < 0.3:
        entries.append(
            StoredMessage({"role": "user", "content": SUMMARY_PREFIX + "earlier work"}, old({"kind": "compaction"}))
        )
    reuse_ids = rng.random() < 0.3  # some local servers number calls call_0, call_1… in every reply
    serial = iter(range(10_000))
    turns = rng.randint(1, 7)
    for turn in range(turns):
        text = f"prompt {turn} " + "word " * rng.randint(0, 80)
        entries.append(
            StoredMessage({"role": "user", "content": text}, old({"blocks": [{"type": "text", "text": text}]}))
        )
        if rng.random() < 0.2:
            entries.append(
                StoredMessage(
                    {"role": "user", "content": '<skill_content name="s">body</skill_content>'}, old({"hidden": True})
                )
            )
        last = turn == turns - 1
        for _ in range(rng.randint(0, 4)):
            ids = [f"call_{i}" if reuse_ids else f"call_{next(serial)}" for i in range(rng.randint(1, 4))]
            calls = [
                {"id": i, "type": "function", "function": {"name": "read", "arguments": json.dumps({"n": k})}}
                for k, i in enumerate(ids)
            ]
            content = rng.choice([None, "let me look"])
            entries.append(
                StoredMessage(
                    {"role": "assistant", "content": content, "tool_calls": calls},
                    old({"reasoning": rng.choice([None, "hm"])}),
                )
            )
            if last and rng.random() < 0.15:
                return entries  # post_response of a reply whose calls have not run yet
            rng.shuffle(ids)  # parallel calls: results arrive as calls finish
            for call_id in ids:
                result = rng.choice(
                    [
                        "ok " * rng.randint(1, 300),
                        "Error: no such file",
                        "Cancelled by the user.",
                        "Interrupted: crow stopped before this tool call finished.",
                    ]
                )
                entries.append(
                    StoredMessage(
                        {"role": "tool", "tool_call_id": call_id, "content": result},
                        old({"tool": {"status": "failed"}}),
                    )
                )
            if rng.random() < 0.15:  # a skill injected before the next step
                entries.append(
                    StoredMessage(
                        {"role": "user", "content": '<skill_content name="t">x</skill_content>'}, old({"hidden": True})
                    )
                )
        if last and rng.random() < 0.3:
            return entries  # pre_request: the loop is about to call the model
        if rng.random() < 0.85:  # a cancelled turn has no final answer
            entries.append(
                StoredMessage(
                    {"role": "assistant", "content": f"answer {turn} " + "fine " * rng.randint(1, 60)},
                    old({"reasoning": "r"}),
                )
            )
    return entries


def compacted(entries: list[StoredMessage], cut: int) -> list[dict[str, Any]]:
    """What compact_messages leaves for the model: head, the summary as a user message, the tail."""
    head = 1 if entries[0].message["role"] == "system" else 0
    summary = {"role": "user", "content": SUMMARY_PREFIX + "summary"}
    return [e.message for e in entries[:head]] + [summary] + [e.message for e in entries[cut:]]


@pytest.mark.parametrize("seed", range(0, 1000, 100))
def test_every_planned_cut_keeps_pairing_and_the_last_prompt(seed):
    for rng in (random.Random(n) for n in range(seed, seed + 100)):
        entries = history(rng)
        for keep_last in (0, 1, 3, 10):
            for budget in (0, 50, 400, 10**9):
                check_cut(entries, keep_last, budget)


def check_cut(entries: list[StoredMessage], keep_last: int, budget: int) -> None:
    messages = [e.message for e in entries]
    assert_strict_pairing(messages, in_flight_ok=True)  # the generator itself writes valid histories
    counts = [count_message(CHARS, m) for m in messages]
    cut = plan_cut(entries, counts, keep_last=keep_last, budget=budget)
    prompts = [i for i, e in enumerate(entries) if e.meta.kind == "prompt"]
    cuts, limit = safe_cuts(entries), len(entries) - keep_last
    base = max((c for c in cuts if c <= limit), default=cuts[0] if cuts else None)
    if cut is None:
        head = head_size(entries)
        useful = [c for c in cuts if any(e.meta.kind != "summary" for e in entries[head:c])]
        assert all(c > limit for c in useful), "a cut that keeps keep_last messages was not taken"
        assert not useful or sum(counts[useful[0] :]) <= budget, "an over-budget tail was not shrunk"
        return
    assert cut in prompts, "the tail must start where a user turn begins"
    assert cut <= prompts[-1], "the last user prompt is always kept verbatim"
    assert_strict_pairing(compacted(entries, cut), in_flight_ok=True)
    # keep_last messages, rounded back to a turn start; fewer turns only while the tail is over budget.
    assert cut >= base
    assert all(sum(counts[c:]) > budget for c in cuts if base <= c < cut)
    if sum(counts[cut:]) > budget:
        assert cut == cuts[-1], "an over-budget tail shrinks down to the latest turn"


def test_a_result_after_a_user_message_blocks_that_cut_only():
    """A broken history (a result separated from its call) must not get worse, nor block all compaction."""
    entries = [
        StoredMessage({"role": "system", "content": "s"}),
        StoredMessage({"role": "user", "content": "a"}, old({"blocks": []})),
        StoredMessage(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
            }
        ),
        StoredMessage({"role": "user", "content": "b"}, old({"blocks": []})),
        StoredMessage({"role": "tool", "tool_call_id": "c1", "content": "late"}),
        StoredMessage({"role": "assistant", "content": "ok"}),
        StoredMessage({"role": "user", "content": "c"}, old({"blocks": []})),
        StoredMessage({"role": "assistant", "content": "done"}),
    ]
    assert safe_cuts(entries) == [1, 6]
    assert plan_cut(entries, [1] * len(entries), keep_last=2, budget=100) == 6


@pytest.mark.anyio
async def test_compaction_through_a_real_session_keeps_the_store_and_replay_consistent(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with ScriptedModel(default=Reply(text="## Goal\nsummarised")) as model:
        profile = ModelProfile(model="scripted", base_url=model.base_url, api_key="k", context_window=100_000)
        async with in_process(AcpAgent(Config(home=tmp_path, models={"m": profile}, model="m"))) as agent:
            await check_sixty_histories(agent, model, tmp_path)


async def check_sixty_histories(agent: AcpAgent, model: ScriptedModel, tmp_path: Any) -> None:
    compact = default_compact(threshold=400, keep_last=4)
    for seed in range(60):
        sid = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        session = agent.sessions[sid]
        entries = history(random.Random(seed))
        for entry in entries:
            session.record(entry.message, entry.meta)
        before_requests = len(model.requests)
        outcome = await compact.compact(SessionView(session))
        messages = session.messages()
        assert_strict_pairing(messages, in_flight_ok=True)
        if not outcome.compacted:
            assert len(model.requests) == before_requests
            continue
        request = model.requests[-1]["messages"]
        assert [m["role"] for m in request] == ["system", "user"] and MARKER in request[1]["content"]
        assert "tools" not in model.requests[-1]
        last_prompt = [e.message for e in entries if e.meta.kind == "prompt"][-1]
        assert last_prompt in messages, "the last user prompt is kept verbatim"
        head = 1 if entries[0].message["role"] == "system" else 0
        assert messages[:head] == [e.message for e in entries[:head]], "the system message stays first"
        assert messages[head]["content"] == SUMMARY_PREFIX + "## Goal\nsummarised"
        assert session.context["compaction_summary"] == "## Goal\nsummarised"
        assert messages[head + 1] == {"role": "assistant", "content": SUMMARY_ACK}, "user/assistant alternate"
        tail = messages[head + 2 :]
        assert tail == [e.message for e in entries][-len(tail) :], "the tail is kept verbatim, in order"
        stored = await agent.store.load(sid)
        assert [e.message for e in stored if e.active] == messages, "the store holds what the model sees"
        replay = list(replay_updates(stored))
        markers = [u for u in replay if getattr(u, "title", None) == COMPACTED_MARKER]
        assert len(markers) == 1 + sum(1 for e in entries if e.meta.kind == "summary")
        shown = [u.content.text for u in replay if u.session_update == "user_message_chunk"]
        assert shown == [e.message["content"] for e in entries if e.meta.kind == "prompt"], (
            "replay shows every prompt once"
        )
