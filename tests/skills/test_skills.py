"""crow_skills with real skill folders: discovery, validation, triggers, the /skills listing.

Injection into sessions is tests/skills/test_skills_session.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.skill_support import make_skill, user_turn

from crow_acp.acp.agent import AcpAgent
from crow_acp.config import load_config
from crow_acp.core.session_view import SessionView
from crow_skills import default_skills, discover, load_skill, search_dirs
from crow_skills.triggers import matching


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
    listed = make_skill(
        tmp_path,
        "listed",
        "name: listed\ndescription: d\nallowed-tools: [Read, Grep]\ntriggers: [pdf, PDF, portable document]\n",
    )
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
    (
        "metadata-nested",
        "name: metadata-nested\ndescription: d\nmetadata:\n  triggers: [a, b]\n",
        "metadata.triggers must be a string",
    ),
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


# The /skills command


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
    session = SessionView(agent.sessions[sid])
    await user_turn(callbacks.pre_request[0].__self__, session, "please share")

    text = await agent.sessions[sid].commands["skills"].handler(session, "")
    assert "2 available, 1 skipped with a warning" in text
    assert "- `shared` (project, loaded in this session; triggers: share): project version" in text
    assert "- `user-skill` (user, available): The user-skill skill." in text
    assert "- `shared` (user, shadowed by the project skill of that name)" in text
    assert f"- {broken}: invalid name 'Broken'" in text
