"""Opening a session in a hostile repository runs nothing of it (issue 18 item 4): crow's own `git
status` for the system prompt ignores the repository's config, whether it sets `core.fsmonitor`, a
clean filter that `.gitattributes` selects, or sits in a bare repository planted in a clone."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.helpers import RecordingClient, crow_env, git, text
from support.hosted import hosted_crow

from crow_acp.testing import Reply, ScriptedModel

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")]


def clone_like(repo: Path) -> None:
    """A repository on branch trunk with one committed file, as a clone leaves it."""
    repo.mkdir()
    git(repo, "init", "-q", "-b", "trunk")
    (repo / "a.txt").write_text("one\n")
    (repo / ".gitattributes").write_text("* filter=evil\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first")


def plant(config: Path, mark: Path) -> None:
    """Commands for git to run by itself: an fsmonitor, and a clean filter for every file."""
    with config.open("a") as handle:
        handle.write(f'[core]\n\tfsmonitor = "touch {mark}.fsmonitor"\n')
        handle.write(f'[filter "evil"]\n\tclean = "touch {mark}.filter; cat"\n')


async def system_prompt_in(tmp_path: Path, cwd: Path) -> str:
    home = tmp_path / "home"
    with ScriptedModel(default=Reply(text="done")) as model:
        async with hosted_crow(RecordingClient(), crow_env(home, model.base_url), cwd=str(cwd)) as (conn, _):
            session_id = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
            assert (await conn.prompt(session_id=session_id, prompt=[text("hi")])).stop_reason == "end_turn"
    system = model.requests[0]["messages"][0]
    assert system["role"] == "system"
    return system["content"]


def marks(tmp_path: Path) -> list[str]:
    return sorted(path.name for path in tmp_path.rglob("MARK*"))


async def test_a_repository_config_that_runs_commands_runs_nothing(tmp_path):
    repo = tmp_path / "repo"
    clone_like(repo)
    plant(repo / ".git" / "config", tmp_path / "MARK")
    (repo / "a.txt").write_text("two\n")  # changed, so git would hash it through the filter
    prompt = await system_prompt_in(tmp_path, repo)
    assert marks(tmp_path) == []
    assert "branch trunk, dirty (1 changed)" in prompt


async def test_a_bare_repository_planted_in_a_clone_runs_nothing(tmp_path):
    repo = tmp_path / "repo"
    clone_like(repo)
    bare = repo / "evil"
    git(repo, "init", "-q", "--bare", "-b", "planted", str(bare))
    plant(bare / "config", tmp_path / "MARK")
    git(bare, "config", "core.bare", "false")
    git(bare, "config", "core.worktree", ".")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "the planted repository, as a clone would bring it")
    prompt = await system_prompt_in(tmp_path, bare)
    assert marks(tmp_path) == []
    assert "branch trunk, clean" in prompt  # the clone's own state, not the planted repository's
