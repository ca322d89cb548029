"""Prompt and skills through the default agent, in process: what reached the model, and what the editor saw."""

from __future__ import annotations

import pytest
from support.helpers import RecordingClient, text
from support.inproc import crow

from crow_acp.testing import Reply, ToolCall
from crow_acp.testing.function_model import FunctionModel


@pytest.fixture
def anyio_backend():
    return "asyncio"


def write(path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)


def skill_wrappers(request: dict, name: str) -> list[dict]:
    start = f'<skill_content name="{name}">'
    return [m for m in request["messages"] if isinstance(m.get("content"), str) and m["content"].startswith(start)]


@pytest.mark.anyio
async def test_prompt_context_catalog_triggers_load_skill_and_the_skills_command(tmp_path, monkeypatch):
    project, crow_home = tmp_path / "project", tmp_path / "crow-home"
    write(project / "AGENTS.md", "Always answer in haiku.")
    write(
        project / ".crow" / "skills" / "git-helper" / "SKILL.md",
        "---\nname: git-helper\ndescription: Git workflows.\nmetadata:\n  triggers: git, rebase\n---\n"
        "Run git status first.\n",
    )
    write(
        crow_home / "skills" / "pdf-tools" / "SKILL.md",
        "---\nname: pdf-tools\ndescription: Read PDFs.\n---\nUse pdftotext.\n",
    )
    write(crow_home / "skills" / "Broken" / "SKILL.md", "---\nname: Broken\ndescription: d\n---\n")
    script = [
        Reply("hello"),
        Reply("rebased"),
        Reply(tool_calls=[ToolCall("load_skill", {"name": "pdf-tools"})]),
        Reply("read it"),
        Reply("again"),
    ]
    client = RecordingClient()
    model = FunctionModel(script, default=Reply("extra"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))  # the machine's ~/.agents stays out
    monkeypatch.chdir(project)
    async with crow(crow_home, model, monkeypatch, client) as conn:
        sid = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        for words in ("hi", "Please rebase onto main", "now read the report", "GIT push too"):
            assert (await conn.prompt(session_id=sid, prompt=[text(words)])).stop_reason == "end_turn"
        before = len(client.updates)
        await conn.prompt(session_id=sid, prompt=[text("/skills")])
        listing = "".join(u.content.text for u in client.updates[before:] if u.session_update == "agent_message_chunk")
    requests = model.requests

    assert len(requests) == 5  # /skills ran without the model
    system = requests[0]["messages"][0]
    assert system["role"] == "system" and "Always answer in haiku." in system["content"]
    assert '<skill name="git-helper"' in system["content"] and '<skill name="pdf-tools"' in system["content"]
    assert "Broken" not in system["content"]
    load = next(t["function"] for t in requests[0]["tools"] if t["function"]["name"] == "load_skill")
    assert load["parameters"]["properties"]["name"]["enum"] == ["git-helper", "pdf-tools"]
    assert "load_skill" in system["content"]  # the tool list in the prompt

    assert skill_wrappers(requests[0], "git-helper") == []
    injected = skill_wrappers(requests[1], "git-helper")
    assert len(injected) == 1 and "Run git status first." in injected[0]["content"]
    messages = requests[1]["messages"]
    assert messages[messages.index(injected[0]) - 1]["content"] == "Please rebase onto main"
    assert [m["role"] for m in skill_wrappers(requests[3], "pdf-tools")] == ["tool"]
    assert len(skill_wrappers(requests[4], "git-helper")) == 1  # "GIT" again: no second copy
    assert len(skill_wrappers(requests[4], "pdf-tools")) == 1

    shown = [(u.title, u.kind) for u in client.of("tool_call") if u.title.startswith("Skill: ")]
    assert shown == [("Skill: git-helper", "read"), ("Skill: pdf-tools", "read")]
    commands = [c.name for u in client.of("available_commands_update") for c in u.available_commands]
    assert "skills" in commands
    assert "`git-helper` (project, loaded in this session; triggers: git, rebase)" in listing
    assert "`pdf-tools` (user, loaded in this session)" in listing
    assert "Broken/SKILL.md: invalid name 'Broken'" in listing
