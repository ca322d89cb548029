"""crow_skills in a real session: injection by trigger and by load_skill, re-injection after
compaction, and what a loaded session remembers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.skill_support import make_skill, user_turn

from crow_acp.acp.agent import AcpAgent
from crow_acp.api import SessionAccess, ToolContext
from crow_acp.config import load_config
from crow_acp.core.session_view import SessionView
from crow_acp.events import ActivityReported
from crow_skills import SkillsHook, default_skills


async def open_session(tmp_path: Path, hook_dir: Path, **options):
    agent = AcpAgent(load_config(home=tmp_path / "crow-home"))
    callbacks = default_skills(hook_dir, **options)
    agent.set_callbacks(callbacks)
    events: list = []
    agent.add_observer(events.append)
    sid = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
    for _ in range(5):
        await asyncio.sleep(0)
    hook: SkillsHook = callbacks.begin_session[0].__self__
    return agent, SessionView(agent.sessions[sid]), hook, events


def skill_messages(session: SessionAccess) -> list[str]:
    return [m["content"] for m in session.get_messages() if m["content"].startswith("<skill_content")]


def skill_reports(events: list) -> list[ActivityReported]:
    return [e for e in events if isinstance(e, ActivityReported) and e.title.startswith("Skill: ")]


@pytest.mark.anyio
async def test_a_trigger_injects_the_body_once_per_session(tmp_path):
    skills = tmp_path / "skills"
    make_skill(skills, "git-helper", metadata="{triggers: git}", body="Run git status first.")
    make_skill(skills, "python", triggers="[python]", body="Use pytest.")
    agent, session, hook, events = await open_session(tmp_path, skills)
    assert [e["name"] for e in session.get_context("skills_catalog")] == ["git-helper", "python"]

    await user_turn(hook, session, "hello")
    assert skill_messages(session) == []
    await user_turn(hook, session, "a GIT question about Python")
    bodies = skill_messages(session)
    assert [b.split('"')[1] for b in bodies] == ["git-helper", "python"]  # both, in one message's turn
    assert "Run git status first." in bodies[0] and bodies[0].endswith("</skill_content>")
    messages = session.get_messages()
    assert messages[-4]["content"] == "a GIT question about Python"  # right after the message that triggered them
    await user_turn(hook, session, "more git and python")
    assert len(skill_messages(session)) == 2  # never again in this session
    assert [(e.title, e.kind, e.status) for e in skill_reports(events)] == [
        ("Skill: git-helper", "read", "completed"),
        ("Skill: python", "read", "completed"),
    ]
    stored = agent.sessions[session.session_id].history
    assert all(e.meta.hidden for e in stored if str(e.message["content"]).startswith("<skill_content"))


@pytest.mark.anyio
async def test_load_skill_offers_known_names_only_and_counts_as_injected(tmp_path):
    skills = tmp_path / "skills"
    make_skill(skills, "git-helper", metadata="{triggers: git}", body="Run git status first.")
    (skills / "git-helper" / "scripts").mkdir()
    (skills / "git-helper" / "scripts" / "check.sh").write_text("true")
    agent, session, hook, _ = await open_session(tmp_path, skills)
    tool = agent.sessions[session.session_id].local_tools["load_skill"]
    assert tool.parameters["properties"]["name"]["enum"] == ["git-helper"]
    assert tool.read_only and tool.view({"name": "git-helper"}).title == "Skill: git-helper"
    assert tool.view({"name": "git-helper"}).kind == "read"

    context = ToolContext(session, "call-1")
    unknown = await tool.call({"name": "nope"}, context)
    assert unknown.is_error and "Known skills: git-helper" in unknown.text
    result = await tool.call({"name": "git-helper"}, context)
    assert (
        result.text.startswith('<skill_content name="git-helper">') and "<file>scripts/check.sh</file>" in result.text
    )
    session._s.record({"role": "tool", "tool_call_id": "call-1", "content": result.text})  # as the loop records it
    again = await tool.call({"name": "git-helper"}, context)
    assert "already loaded" in again.text
    await user_turn(hook, session, "git time")
    assert len(skill_messages(session)) == 1  # the loaded body counts: no trigger injection on top


@pytest.mark.anyio
async def test_bodies_return_after_compaction_newest_first_within_the_budget(tmp_path):
    skills = tmp_path / "skills"
    make_skill(skills, "old-skill", triggers="[alpha]", body="A" * 1200)  # ~390 tokens wrapped
    make_skill(skills, "new-skill", triggers="[beta]", body="B" * 1200)
    make_skill(skills, "big-skill", triggers="[gamma]", body="C" * 8000)  # ~440 tokens once cut to 400
    _, session, hook, events = await open_session(tmp_path, skills, reinject_budget=900, reinject_skill_cap=400)
    await user_turn(hook, session, "alpha")
    await user_turn(hook, session, "beta")
    await user_turn(hook, session, "gamma")
    assert session.get_context("skills_injected") == ["old-skill", "new-skill", "big-skill"]
    await user_turn(hook, session, "filler")
    assert session.compact_messages(keep_last=2, summary="we talked") > 0
    assert skill_messages(session) == []

    await hook.pre_request(session, step=2)  # compaction is noticed mid-turn too
    back = skill_messages(session)
    # big-skill (newest) is cut to 400 tokens and fits; new-skill fits too; old-skill is over the budget.
    assert [b.split('"')[1] for b in back] == ["new-skill", "big-skill"]
    assert "[... truncated: 6400 more characters" in back[1] and "C" * 1601 not in back[1]
    assert [e.text for e in skill_reports(events)][-2:] == ["Re-injected after compaction"] * 2
    assert session.get_context("skills_injected") == ["new-skill", "big-skill"]
    await hook.pre_request(session, step=3)
    assert len(skill_messages(session)) == 2  # no change, no second copy
    await user_turn(hook, session, "alpha again")
    assert skill_messages(session)[-1].startswith(
        '<skill_content name="old-skill">'
    )  # dropped, so it may trigger again


@pytest.mark.anyio
async def test_a_loaded_session_remembers_what_was_injected(tmp_path):
    skills = tmp_path / "skills"
    make_skill(skills, "git-helper", metadata="{triggers: git}")
    first, session, hook, _ = await open_session(tmp_path, skills)
    await user_turn(hook, session, "git please")
    assert len(skill_messages(session)) == 1
    await first.shutdown()  # the first process ends: one writer per session

    restarted = AcpAgent(load_config(home=tmp_path / "crow-home"))  # same store, new process state
    callbacks = default_skills(skills)
    restarted.set_callbacks(callbacks)
    await restarted.load_session(cwd=str(tmp_path), session_id=session.session_id, mcp_servers=[])
    loaded = SessionView(restarted.sessions[session.session_id])
    await user_turn(callbacks.pre_request[0].__self__, loaded, "git again")
    assert len(skill_messages(loaded)) == 1
