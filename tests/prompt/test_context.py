"""Context files are read as read_file reads them (issue 18 item 6): inside the roots, regular files,
bounded in size. Symlinks out of the workspace (to a planted secret, to /proc/self/environ) never reach
the model and are shown as skipped; a FIFO does not hang the session; a huge file is cut to the bound."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.helpers import RecordingClient, crow_env, run_crow, text

from crow_acp.testing import Reply, ScriptedModel

pytestmark = pytest.mark.anyio
SECRET = "aws_secret_access_key = planted-canary-4d1f"
ENV_CANARY = "env-canary-93ab7"


async def first_request(tmp_path: Path, cwd: Path, client: RecordingClient, wrapper: tuple[str, ...] = ()) -> str:
    """The model's first request, as JSON text."""
    with ScriptedModel(default=Reply(text="done")) as model:
        env = crow_env(tmp_path / "home", model.base_url, CROW_TEST_CANARY=ENV_CANARY)
        async with run_crow(client, env, cwd=str(cwd), wrapper=wrapper) as (conn, _):
            session_id = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
            assert (await conn.prompt(session_id=session_id, prompt=[text("hi")])).stop_reason == "end_turn"
    return json.dumps(model.requests[0])


def skipped_reports(client: RecordingClient) -> str:
    return repr([u for u in client.updates if getattr(u, "title", None) == "Workspace context file skipped"])


async def test_context_files_that_leave_the_workspace_are_skipped_and_shown(tmp_path):
    (tmp_path / "credentials").write_text(SECRET)
    repo = tmp_path / "repo"
    cwd = repo / "sub"
    (repo / ".git").mkdir(parents=True)
    cwd.mkdir()
    (repo / "AGENTS.md").symlink_to(tmp_path / "credentials")  # in the git root above the cwd
    (cwd / "CLAUDE.md").symlink_to("/proc/self/environ")
    (cwd / "notes").mkdir()
    (cwd / "notes" / "crow.md").write_text("linked rules inside the workspace")
    (cwd / "CROW.md").symlink_to("notes/crow.md")
    os.mkfifo(repo / "CROW.md")  # nobody ever writes it: a read would wait forever
    client = RecordingClient()
    request = await first_request(tmp_path, cwd, client)
    assert "linked rules inside the workspace" in request
    assert "planted-canary" not in request and ENV_CANARY not in request
    shown = skipped_reports(client)
    assert str(repo / "AGENTS.md") in shown and "outside the workspace" in shown
    assert str(cwd / "CLAUDE.md") in shown and str(repo / "CROW.md") in shown and "FIFO" in shown


async def test_a_huge_context_file_is_read_only_up_to_the_bound(tmp_path):
    """A 2 GB AGENTS.md (sparse: it costs no disk) under a 1.5 GB address-space limit: read whole, crow would fail."""
    work = tmp_path / "work"
    work.mkdir()
    with (work / "AGENTS.md").open("wb") as handle:
        handle.write(b"rules first\n")
        handle.truncate(2 << 30)
    client = RecordingClient()
    request = await first_request(tmp_path, work, client, wrapper=("prlimit", f"--as={3 << 29}"))
    system = json.loads(request)["messages"][0]["content"]
    assert "rules first" in system and "[... truncated:" in system
    assert len(system) < 40_000  # the 32,000-character cap and the prompt around it


async def test_a_project_skill_linked_out_of_the_workspace_is_skipped(tmp_path):
    outside = tmp_path / "outside" / "SKILL.md"
    outside.parent.mkdir()
    outside.write_text(f"---\nname: leak\ndescription: {SECRET}\n---\nbody\n")
    work = tmp_path / "work"
    (work / ".agents" / "skills" / "leak").mkdir(parents=True)
    (work / ".agents" / "skills" / "leak" / "SKILL.md").symlink_to(outside)
    request = await first_request(tmp_path, work, RecordingClient())
    assert "planted-canary" not in request
