"""crow_prompt with real files: workspace context nesting and cap, git summary, templates, rebuilds."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import anyio
import pytest
from support.helpers import git

from crow_acp.acp.agent import AcpAgent
from crow_acp.api import CrowCallbacks, SessionAccess
from crow_acp.config import load_config
from crow_acp.core.session_view import SessionView
from crow_acp.events import ActivityReported
from crow_prompt import PromptTemplateError, default_prompt
from crow_prompt.callback import CONTEXT_CHANGED
from crow_prompt.context import context_files, git_root, workspace_context
from crow_prompt.facts import git_summary

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


async def open_session(
    tmp_path: Path, cwd: Path, callbacks: CrowCallbacks | None = None
) -> tuple[AcpAgent, SessionAccess, list]:
    agent = AcpAgent(load_config(home=tmp_path / "home"))
    agent.set_callbacks(callbacks or CrowCallbacks())
    events: list = []
    agent.add_observer(events.append)
    sid = (await agent.new_session(cwd=str(cwd), mcp_servers=[])).session_id
    if agent._background:  # the held session/new events reach the observer once the response is out
        with anyio.fail_after(30):
            await asyncio.wait(set(agent._background))
    return agent, SessionView(agent.sessions[sid]), events


def system_prompt(session: SessionAccess) -> str:
    first = session.get_messages()[0]
    assert first["role"] == "system"
    return first["content"]


@pytest.fixture
def anyio_backend():
    return "asyncio"


# Workspace context


def test_context_files_nest_from_the_git_root_down_to_the_cwd_nearest_last(tmp_path):
    write(tmp_path / "AGENTS.md", "above the repository")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    write(repo / "AGENTS.md", "root rules")
    write(repo / "a" / "CROW.md", "a rules")
    write(repo / "a" / "b" / "CLAUDE.md", "b claude")
    write(repo / "a" / "b" / "AGENTS.md", "b agents")
    cwd = repo / "a" / "b"

    files = context_files(cwd)
    assert files == [repo / "AGENTS.md", repo / "a" / "CROW.md", cwd / "AGENTS.md", cwd / "CLAUDE.md"]
    text = workspace_context(cwd)
    assert "above the repository" not in text
    assert text.index("root rules") < text.index("a rules") < text.index("b agents") < text.index("b claude")
    assert f'<workspace_file path="{repo / "AGENTS.md"}">' in text


def test_outside_a_repository_only_the_cwd_counts(tmp_path):
    write(tmp_path / "AGENTS.md", "parent")
    write(tmp_path / "work" / "AGENTS.md", "here")
    assert context_files(tmp_path / "work") == [tmp_path / "work" / "AGENTS.md"]


def test_a_file_linked_under_two_names_counts_once(tmp_path):
    write(tmp_path / "AGENTS.md", "shared rules")
    (tmp_path / "CLAUDE.md").symlink_to(tmp_path / "AGENTS.md")
    assert workspace_context(tmp_path).count("shared rules") == 1


def test_the_cap_keeps_the_nearest_file_and_marks_what_it_cut(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    write(repo / "AGENTS.md", "R" * 500)
    write(repo / "mid" / "AGENTS.md", "M" * 300)
    write(repo / "mid" / "leaf" / "AGENTS.md", "L" * 200)

    text = workspace_context(repo / "mid" / "leaf", cap=350)
    assert "L" * 200 in text  # nearest: whole
    assert "M" * 150 in text and "M" * 151 not in text  # cut at the remaining budget
    assert f"[... truncated: 150 of 300 characters not shown; read {repo / 'mid' / 'AGENTS.md'} for the rest]" in text
    assert "R" not in text.replace(str(repo), "")  # outermost: left out, but named
    assert f"[omitted: 500 characters over the workspace context cap; read {repo / 'AGENTS.md'} if you need it]" in text
    assert workspace_context(repo / "mid" / "leaf", cap=10_000).count("[") == 0


# Git summary


@needs_git
@pytest.mark.anyio
async def test_git_summary_names_the_branch_and_whether_it_is_dirty(tmp_path):
    repo, plain = tmp_path / "repo", tmp_path / "plain"
    repo.mkdir()
    plain.mkdir()
    git(repo, "init", "-q", "-b", "trunk")
    write(repo / "a.txt", "one")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "first")
    assert await git_summary(repo) == "branch trunk, clean"
    write(repo / "a.txt", "two")
    write(repo / "new.txt", "new")
    (repo / "sub").mkdir()
    assert await git_summary(repo / "sub") == "branch trunk, dirty (1 changed, 1 untracked)"  # from below the root too
    assert git_root(plain) is None and await git_summary(plain) is None


# Templates


@pytest.mark.anyio
async def test_the_default_template_renders_cwd_tools_context_and_the_skills_catalog(tmp_path):
    write(tmp_path / "AGENTS.md", "Always answer in haiku.")
    prompt = default_prompt(home=tmp_path / "home")
    _, session, _ = await open_session(tmp_path, tmp_path)
    session.set_context("skills_catalog", [{"name": "pdf-tools", "description": "Read PDFs.", "path": "/s/SKILL.md"}])
    await prompt(session, loaded=False)

    text = system_prompt(session)
    assert f"Working directory: {tmp_path}" in text
    assert "Always answer in haiku." in text
    assert '<skill name="pdf-tools" path="/s/SKILL.md">Read PDFs.</skill>' in text
    assert "{{" not in text and "{%" not in text


@pytest.mark.anyio
async def test_template_precedence_python_then_config_then_crow_home_then_default(tmp_path):
    home = tmp_path / "home"
    write(home / "prompts" / "system.md", "from home in {{ cwd }}")
    write(home / "custom.md", "from config on {{ os }}")
    _, session, _ = await open_session(tmp_path, tmp_path)

    await default_prompt(home=home)(session, loaded=False)
    assert system_prompt(session) == f"from home in {tmp_path}\n"

    await default_prompt(home=home, system_path="custom.md")(session, loaded=False)  # relative to home
    assert system_prompt(session).startswith("from config on ")

    variables = {"team": "crows", "who": lambda s: s.session_id}
    python = default_prompt("{{ team }}/{{ who }}", variables, home=home, system_path="custom.md")
    await python(session, loaded=False)
    assert system_prompt(session) == f"crows/{session.session_id}\n"

    await default_prompt(home=tmp_path / "empty-home")(session, loaded=False)
    assert system_prompt(session).startswith("You are Crow")


def test_a_python_template_with_a_typo_fails_at_once_naming_the_variable():
    with pytest.raises(PromptTemplateError, match=r"unknown variable 'wrokspace_context'"):
        default_prompt("{{ cwd }} {{ wrokspace_context }}")
    with pytest.raises(PromptTemplateError, match=r"line 2: .*"):
        default_prompt("fine\n{% if %}")


@pytest.mark.anyio
async def test_a_template_file_with_a_typo_is_reported_and_the_default_is_used(tmp_path):
    home = tmp_path / "home"
    template = write(home / "prompts" / "system.md", "Rules\n{{ cwd }}\n{{ projct_name }}\n")
    callbacks = CrowCallbacks(begin_session=[default_prompt(home=home)])
    _, session, events = await open_session(tmp_path, tmp_path, callbacks)

    assert "You are Crow" in system_prompt(session)
    failures = [e for e in events if isinstance(e, ActivityReported) and e.status == "failed"]
    assert [e.title for e in failures] == ["System prompt template error"]
    assert str(template) in failures[0].text and "'projct_name'" in failures[0].text


@pytest.mark.anyio
async def test_a_missing_template_file_is_reported_and_the_default_is_used(tmp_path):
    missing = tmp_path / "nope.md"
    _, session, events = await open_session(tmp_path, tmp_path, CrowCallbacks(begin_session=[default_prompt(missing)]))
    failure = next(e for e in events if isinstance(e, ActivityReported) and e.status == "failed")
    assert f"{missing}: cannot read the template" in failure.text
    assert system_prompt(session).startswith("You are Crow")


@pytest.mark.anyio
async def test_an_undefined_attribute_is_a_strict_error_with_its_line(tmp_path):
    home = tmp_path / "home"
    write(home / "prompts" / "system.md", "{% for s in skills %}\n{{ s.nmae }}\n{% endfor %}")
    _, session, events = await open_session(tmp_path, tmp_path)
    session.set_context("skills_catalog", [{"name": "x", "description": "d", "path": "p"}])
    await default_prompt(home=home)(session, loaded=False)
    for _ in range(3):
        await asyncio.sleep(0)
    failure = next(e for e in events if isinstance(e, ActivityReported) and e.status == "failed")
    assert "line 2" in failure.text and "nmae" in failure.text
    assert "You are Crow" in system_prompt(session)


# Rebuilds


@pytest.mark.anyio
async def test_the_prompt_is_rebuilt_after_compaction_and_when_context_files_change(tmp_path):
    builds: list[int] = []
    prompt = default_prompt(
        "{{ workspace_context }} #{{ n }}", {"n": lambda s: builds.append(1) or len(builds)}, home=tmp_path
    )
    agents = write(tmp_path / "AGENTS.md", "version one")
    _, session, _ = await open_session(tmp_path, tmp_path, CrowCallbacks(begin_session=[prompt]))
    assert "version one" in system_prompt(session) and len(builds) == 1

    await prompt(session, step=0)
    await prompt(session, step=1)
    assert len(builds) == 1  # nothing changed: the cached prompt prefix stays as it was

    agents.write_text("version two, longer")
    await prompt(session, step=1)
    assert len(builds) == 1  # files are checked before a new prompt only
    await prompt(session, step=0)
    # Told at the end, not written into the system prompt (the start of every request, which providers cache).
    assert "version one" in system_prompt(session) and len(builds) == 1
    assert "version two" in last_message(session) and last_message(session).startswith(CONTEXT_CHANGED)
    await prompt(session, step=0)
    assert len(builds) == 1 and session.get_messages().count(session.get_messages()[-1]) == 1  # told once

    for i in range(4):
        session.add_message("user", f"question {i}")
        session.add_message("assistant", f"answer {i}")
    assert session.compact_messages(keep_last=2, summary="earlier talk") > 0
    await prompt(session, step=3)
    assert len(builds) == 2
    assert "version two" in system_prompt(session) and system_prompt(session).endswith("#2\n")

    write(tmp_path / "CLAUDE.md", "a new file")
    await prompt(session, step=0)
    assert "a new file" in last_message(session) and len(builds) == 2


def last_message(session) -> str:
    return session.get_messages()[-1]["content"]
