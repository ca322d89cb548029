"""crow_skills with real skill folders: discovery, validation, triggers, injection, re-injection."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from crow_acp.agent import AcpAgent
from crow_acp.api import SessionAccess, ToolContext
from crow_acp.config import load_config
from crow_acp.events import ActivityReported
from crow_skills import SkillsHook, default_skills, discover, load_skill, search_dirs
from crow_skills.triggers import matching


def make_skill(root: Path, folder: str, frontmatter: str | None = None, body: str = "Body.", **fields: str) -> Path:
    """root/folder/SKILL.md; `frontmatter` is written verbatim when given, else built from fields."""
    if frontmatter is None:
        fields = {"name": folder, "description": f"The {folder} skill.", **fields}
        frontmatter = "".join(f"{key}: {value}\n" for key, value in fields.items())
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{frontmatter}---\n{body}\n")
    return path


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A fake user home (for ~/.agents/skills) and crow home; the machine's own skills stay out."""
    user = tmp_path / "user"
    user.mkdir()
    monkeypatch.setenv("HOME", str(user))
    return tmp_path / "crow-home"


# Discovery


def test_project_skills_win_and_crow_folders_beat_agents_folders(tmp_path, home):
    cwd = tmp_path / "project"
    make_skill(Path.home() / ".agents" / "skills", "alpha", description="agents-user alpha")
    make_skill(Path.home() / ".agents" / "skills", "only-agents-user")
    make_skill(home / "skills", "alpha", description="crow-user alpha")
    make_skill(home / "skills", "beta", description="crow-user beta")
    make_skill(cwd / ".agents" / "skills", "beta", description="agents-project beta")
    make_skill(cwd / ".agents" / "skills", "gamma", description="agents-project gamma")
    make_skill(cwd / ".crow" / "skills", "gamma", description="crow-project gamma")

    dirs = search_dirs(cwd, home=home)
    assert [(d.path, d.scope) for d in dirs] == [
        (Path.home() / ".agents" / "skills", "user"),
        (home / "skills", "user"),
        (cwd / ".agents" / "skills", "project"),
        (cwd / ".crow" / "skills", "project"),
    ]
    found = discover(dirs)
    assert list(found.skills) == ["alpha", "beta", "gamma", "only-agents-user"]
    assert found.skills["alpha"].description == "crow-user alpha"
    assert (found.skills["beta"].description, found.skills["beta"].source) == ("agents-project beta", "project")
    assert found.skills["gamma"].description == "crow-project gamma"
    assert sorted((loser.description, winner.description) for loser, winner in found.shadowed) == [
        ("agents-project gamma", "crow-project gamma"),
        ("agents-user alpha", "crow-user alpha"),
        ("crow-user beta", "agents-project beta"),
    ]
    assert found.warnings == []


def test_a_given_skills_dir_replaces_the_standard_ones(tmp_path, home):
    make_skill(home / "skills", "standard")
    make_skill(tmp_path / "mine", "custom-one")
    make_skill(tmp_path / "project" / "rel", "relative-one")
    assert list(discover(search_dirs(tmp_path, tmp_path / "mine", home)).skills) == ["custom-one"]
    found = discover(search_dirs(tmp_path / "project", ["rel", tmp_path / "mine"], home))  # relative to the cwd
    assert list(found.skills) == ["custom-one", "relative-one"]
    assert {skill.source for skill in found.skills.values()} == {"custom"}


def test_folders_without_skill_md_and_hidden_folders_are_not_skills(tmp_path):
    make_skill(tmp_path, "real")
    (tmp_path / "notes").mkdir()
    make_skill(tmp_path, ".hidden")
    found = discover(search_dirs(tmp_path, tmp_path))
    assert list(found.skills) == ["real"] and found.warnings == []


def test_optional_fields_parse(tmp_path):
    path = make_skill(
        tmp_path,
        "full",
        "name: full\n"
        "description: Does everything.\n"
        "license: Apache-2.0\n"
        "compatibility: Needs git and network access\n"
        "metadata:\n  author: crow\n  version: 1.0\n  triggers: deploy, ship it\n"
        "allowed-tools: Bash(git:*) Read\n"
        "x-other-host-field: ignored\n",
        body="# Full\n\nSteps.",
    )
    skill = load_skill(path, "project")
    assert (skill.license, skill.compatibility) == ("Apache-2.0", "Needs git and network access")
    assert skill.metadata == {"author": "crow", "version": "1.0", "triggers": "deploy, ship it"}
    assert skill.allowed_tools == ("Bash(git:*)", "Read")
    assert skill.triggers == ("deploy", "ship it")
    assert skill.body == "# Full\n\nSteps."
    listed = make_skill(tmp_path, "listed", "name: listed\ndescription: d\nallowed-tools: [Read, Grep]\ntriggers: [pdf, PDF, portable document]\n")
    assert load_skill(listed).allowed_tools == ("Read", "Grep")
    assert load_skill(listed).triggers == ("pdf", "portable document")


INVALID = [
    ("no-frontmatter", None, "no YAML frontmatter"),
    ("unclosed", None, "no closing '---' line"),
    ("bad-yaml", "name: bad-yaml\ndescription: Use when: anything\n", "invalid YAML frontmatter"),
    ("not-mapping", "- a list\n", "must be a YAML mapping"),
    ("no-name", "description: d\n", "missing required field 'name'"),
    ("name-type", "name: 12\ndescription: d\n", "'name' must be a string"),
    ("Upper", "name: Upper\ndescription: d\n", "invalid name 'Upper'"),
    ("-lead", "name: -lead\ndescription: d\n", "invalid name '-lead'"),
    ("trail-", "name: trail-\ndescription: d\n", "invalid name 'trail-'"),
    ("dou--ble", "name: dou--ble\ndescription: d\n", "invalid name 'dou--ble'"),
    ("a" * 65, f"name: {'a' * 65}\ndescription: d\n", "invalid name"),
    ("folder", "name: other\ndescription: d\n", "name 'other' does not match its folder 'folder'"),
    ("no-description", "name: no-description\n", "missing required field 'description'"),
    ("empty-description", "name: empty-description\ndescription: '  '\n", "'description' is empty"),
    ("long-description", f"name: long-description\ndescription: {'x' * 1025}\n", "the limit is 1024"),
    ("description-type", "name: description-type\ndescription: [a, b]\n", "'description' must be a string"),
    ("license-type", "name: license-type\ndescription: d\nlicense: {a: b}\n", "'license' must be a string"),
    ("long-compat", f"name: long-compat\ndescription: d\ncompatibility: {'x' * 501}\n", "the limit is 500"),
    ("metadata-type", "name: metadata-type\ndescription: d\nmetadata: [a]\n", "'metadata' must be a mapping"),
    ("metadata-nested", "name: metadata-nested\ndescription: d\nmetadata:\n  triggers: [a, b]\n", "metadata.triggers must be a string"),
    ("tools-type", "name: tools-type\ndescription: d\nallowed-tools: {a: b}\n", "'allowed-tools' must be"),
    ("triggers-type", "name: triggers-type\ndescription: d\ntriggers: {a: b}\n", "'triggers' must be a list"),
]


@pytest.mark.parametrize(("folder", "frontmatter", "problem"), INVALID, ids=[case[0][:20] for case in INVALID])
def test_every_validation_error_is_a_warning_naming_the_file_and_the_problem(tmp_path, folder, frontmatter, problem):
    path = tmp_path / folder / "SKILL.md"
    path.parent.mkdir()
    if folder == "no-frontmatter":
        path.write_text("# Just Markdown\n")
    elif folder == "unclosed":
        path.write_text("---\nname: unclosed\ndescription: d\n# body\n")
    else:
        path.write_text(f"---\n{frontmatter}---\nbody\n")
    make_skill(tmp_path, "good")

    found = discover(search_dirs(tmp_path, tmp_path))
    assert list(found.skills) == ["good"]  # the broken one is skipped, nothing crashes
    assert len(found.warnings) == 1
    assert found.warnings[0].startswith(f"{path}: ")
    assert problem in found.warnings[0]


def test_a_file_that_is_not_utf8_is_a_warning(tmp_path):
    path = tmp_path / "latin" / "SKILL.md"
    path.parent.mkdir()
    path.write_bytes(b"---\nname: latin\ndescription: caf\xe9\n---\n")
    found = discover(search_dirs(tmp_path, tmp_path))
    assert found.skills == {} and found.warnings[0].startswith(f"{path}: not UTF-8 text")


def test_yaml_hint_for_an_unquoted_colon(tmp_path):
    make_skill(tmp_path, "colon", "name: colon\ndescription: Use when: testing\n")
    assert "quote values that contain ': '" in discover(search_dirs(tmp_path, tmp_path)).warnings[0]


# Triggers


def triggered(tmp_path: Path, text: str) -> list[str]:
    make_skill(tmp_path, "git-helper", metadata="{triggers: 'git, merge conflict'}")
    make_skill(tmp_path, "python", triggers="[python, pytest]")
    make_skill(tmp_path, "cpp", triggers="['c++']")
    make_skill(tmp_path, "plain")
    skills = discover(search_dirs(tmp_path, tmp_path)).skills.values()
    return [skill.name for skill, _ in matching(skills, text)]


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("help me with Git", ["git-helper"]),
        ("GIT: status?", ["git-helper"]),
        ("push it to github", []),
        ("gitlab and digital", []),
        ("a merge   conflict in\nmain", ["git-helper"]),
        ("mergeconflict", []),
        ("run pytest on the git repo", ["git-helper", "python"]),
        ("is c++ faster than python?", ["cpp", "python"]),
        ("a c++20 module", []),
        ('see <context uri="file:///a.py">\nimport git\n</context> please', []),
    ],
)
def test_triggers_match_whole_words_and_phrases_ignoring_case(tmp_path, text, names):
    assert triggered(tmp_path, text) == names


# Injection in a real session


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
    return agent, SessionAccess(agent.sessions[sid]), hook, events


async def user_turn(hook: SkillsHook, session: SessionAccess, text: str) -> None:
    """What a prompt does before its first model call: record the user message, run pre_request."""
    session.add_message("user", text)
    await hook.pre_request(session, step=0)
    session.add_message("assistant", "ok")


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
    assert result.text.startswith('<skill_content name="git-helper">') and "<file>scripts/check.sh</file>" in result.text
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
    assert skill_messages(session)[-1].startswith('<skill_content name="old-skill">')  # dropped, so it may trigger again


@pytest.mark.anyio
async def test_skills_command_lists_sources_status_and_warnings(tmp_path, home):
    make_skill(home / "skills", "user-skill")
    make_skill(home / "skills", "shared", description="user version")
    make_skill(tmp_path / ".crow" / "skills", "shared", description="project version", triggers="[share]")
    broken = make_skill(tmp_path / ".agents" / "skills", "broken", "name: Broken\ndescription: d\n")
    agent = AcpAgent(load_config(home=home))
    callbacks = default_skills(home=home)
    agent.set_callbacks(callbacks)
    sid = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
    session = SessionAccess(agent.sessions[sid])
    await user_turn(callbacks.pre_request[0].__self__, session, "please share")

    text = await agent.sessions[sid].commands["skills"].handler(session, "")
    assert "2 available, 1 skipped with a warning" in text
    assert "- `shared` (project, loaded in this session; triggers: share): project version" in text
    assert "- `user-skill` (user, available): The user-skill skill." in text
    assert "- `shared` (user, shadowed by the project skill of that name)" in text
    assert f"- {broken}: invalid name 'Broken'" in text


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
    loaded = SessionAccess(restarted.sessions[session.session_id])
    await user_turn(callbacks.pre_request[0].__self__, loaded, "git again")
    assert len(skill_messages(loaded)) == 1
