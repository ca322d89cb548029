"""Every block in README.md and docs/*.md that a user would paste runs here, by its language tag.

- `toml` loads with crow's strict config loader; `json` parses;
- `python` compiles; an agent file (its first line names `--agent FILE.py:ATTR`) is loaded as `crow acp
  --agent` loads it and answers a prompt; any other block runs as a script;
- `sh` runs for real under a terminal, in a scratch directory whose `.venv/bin` is this crow (forked), with a
  scripted model configured, answering `y` to each permission question as a user trying it would;
- `text` is output or a diagram: nothing to paste.

A block that cannot run offline says why in `<!-- not run: why -->` on the line before its fence; it is still
parsed or compiled where its language allows. Every fence needs a language tag.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import anyio
import pexpect
import pytest
from support import spawn
from support.inproc import crow

from crow_acp.config import load_config
from crow_acp.testing import Reply, ScriptedModel, ToolCall
from crow_acp.testing.function_model import FunctionModel

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NOT_RUN = re.compile(r"<!-- not run: (\S.*\S) -->")
AGENT_SPEC = re.compile(r"--agent (\S+\.py):(\w+)")
RUN = {"toml", "json", "python", "sh"}
SHOWN = {"text"}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    body: str
    not_run: str | None

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def read_blocks(page: Path) -> list[Block]:
    lines = page.read_text().splitlines()
    found, n = [], 0
    while n < len(lines):
        if lines[n].startswith("```"):
            start, lang = n, lines[n][3:].strip()
            end = next((k for k in range(n + 1, len(lines)) if lines[k] == "```"), None)
            assert end is not None, f"{page.relative_to(ROOT)}:{n + 1}: a fence that never closes"
            before = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
            marker = NOT_RUN.fullmatch(before.strip())
            body = "\n".join(lines[start + 1 : end]) + "\n"
            found.append(Block(page, start + 1, lang, body, marker.group(1) if marker else None))
            n = end
        n += 1
    return found


BLOCKS = [block for page in PAGES for block in read_blocks(page)]


def runnable(lang: str) -> list[Block]:
    return [b for b in BLOCKS if b.lang == lang and b.not_run is None]


def ids(blocks: list[Block]) -> list[str]:
    return [str(b) for b in blocks]


def is_agent(block: Block) -> bool:
    first = block.body.splitlines()[0]
    return first.startswith("#") and AGENT_SPEC.search(first) is not None


def test_every_fence_has_a_language_and_runs_or_says_why_not():
    assert len(BLOCKS) >= 10 and any(b.page.parent.name == "docs" for b in BLOCKS)
    untagged = [str(b) for b in BLOCKS if not b.lang]
    assert untagged == [], "every fence needs a language tag (text for output and diagrams)"
    uncovered = [f"{b} ({b.lang})" for b in BLOCKS if b.lang not in RUN | SHOWN and b.not_run is None]
    assert uncovered == [], "a block no test runs must say why: <!-- not run: why --> before its fence"


def test_the_readme_holds_the_two_commands_ci_runs():
    """.ci/run runs the README's test command word for word; the README stays a front door."""
    readme = (ROOT / "README.md").read_text()
    install = "python3 -m venv .venv && .venv/bin/pip install -e "
    assert install + '".[test]" && .venv/bin/python -m pytest -q\n' in readme
    assert install + '. && .venv/bin/crow run "Say hello in five words"\n' in readme
    ci = (ROOT / ".ci" / "run").read_text()
    assert "\n" + install + '".[test]" && .venv/bin/python -m pytest -q\n' in ci
    assert len(readme.splitlines()) <= 200


LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for the page's headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = [line.lstrip("#").strip() for line in page.read_text().splitlines() if re.match(r"#+ ", line)]
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def test_links_between_pages_reach_a_file_and_a_heading():
    broken = []
    for page in PAGES:
        for target in LINK.findall(page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue  # another site
            path, _, anchor = target.partition("#")
            goal = (page.parent / path).resolve() if path else page
            if not goal.exists() or (anchor and goal.suffix == ".md" and anchor not in anchors(goal)):
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


@pytest.mark.parametrize("block", runnable("toml"), ids=ids(runnable("toml")))
def test_toml_blocks_load_with_the_strict_config_loader(block, tmp_path, monkeypatch):
    monkeypatch.delenv("CROW_MODEL", raising=False)
    (tmp_path / "config.toml").write_text(block.body)
    assert load_config(home=tmp_path).warnings() == []


@pytest.mark.parametrize("block", runnable("json"), ids=ids(runnable("json")))
def test_json_blocks_parse(block):
    json.loads(block.body)


PYTHON = [b for b in BLOCKS if b.lang == "python"]


@pytest.mark.parametrize("block", PYTHON, ids=ids(PYTHON))
def test_python_blocks_compile(block):
    compile(block.body, str(block), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


AGENTS = [b for b in runnable("python") if is_agent(b)]
SCRIPTS = [b for b in runnable("python") if not is_agent(b)]


def write_agent(block: Block, where: Path) -> str:
    """The block saved under the file name its first line gives; the --agent spec for it."""
    match = AGENT_SPEC.search(block.body.splitlines()[0])
    assert match is not None
    (where / match.group(1)).write_text(block.body)
    return f"{where / match.group(1)}:{match.group(2)}"


@pytest.mark.anyio
@pytest.mark.parametrize("block", AGENTS, ids=ids(AGENTS))
async def test_agent_blocks_load_as_crow_acp_agent_loads_them_and_answer(block, tmp_path, crow_home, monkeypatch):
    spec = write_agent(block, tmp_path)
    model = FunctionModel(default=Reply(text="STOP: done."))  # a judge in a pattern reads it as its verdict
    with anyio.fail_after(60):
        async with crow(crow_home, model, monkeypatch, agent=spec) as agent:
            sid = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            done = await agent.prompt(prompt=[{"type": "text", "text": "go"}], session_id=sid)
    assert done.stop_reason == "end_turn" and model.requests


@pytest.mark.anyio
async def test_the_readme_agent_refuses_a_force_push_before_anyone_is_asked(tmp_path, crow_home, monkeypatch):
    (block,) = [b for b in AGENTS if b.page.name == "README.md" and "guarded.py" in b.body]
    push = ToolCall("run_command", {"command": "git push --force origin main"})
    model = FunctionModel([Reply(tool_calls=[push]), Reply(text="I will not.")])
    with anyio.fail_after(60):
        async with crow(crow_home, model, monkeypatch, agent=write_agent(block, tmp_path)) as agent:
            sid = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await agent.prompt(prompt=[{"type": "text", "text": "ship it"}], session_id=sid)
    result = model.requests[1]["messages"][-1]
    assert result["role"] == "tool" and "Never force-push" in result["content"]


def test_the_readme_agent_runs_as_a_script_its_tool_answering_and_only_the_answer_on_stdout(tmp_path):
    (block,) = [b for b in AGENTS if b.page.name == "README.md" and "weather.py" in b.body]
    call = ToolCall("weather", {"city": "Oslo"})
    with ScriptedModel([Reply(tool_calls=[call]), Reply(text="Sunny in Oslo.")]) as model:
        work, env = scratch(tmp_path, model.base_url)
        (work / "weather.py").write_text(block.body)
        done = subprocess.run([spawn.python(), "weather.py"], cwd=work, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Sunny in Oslo.\n"
    assert model.requests[0]["messages"][0] == {"role": "system", "content": "Answer in one sentence."}
    assert model.requests[1]["messages"][-1]["content"] == "Sunny and 21 °C in Oslo."


@pytest.mark.anyio
async def test_the_notes_agent_of_extending_writes_and_finds_notes_as_its_tools_promise(
    tmp_path, crow_home, monkeypatch
):
    (block,) = [b for b in AGENTS if "notes_agent.py" in b.body]
    write = ToolCall("add_note", {"text": "milk\nis gone"})
    model = FunctionModel([Reply(tool_calls=[write]), Reply(tool_calls=[ToolCall("find_notes", {"word": "MILK"})])])
    model.add(Reply(text="Found it."))
    asked = []

    def allow(call):
        asked.append(call.title)
        return True

    with anyio.fail_after(60):
        async with crow(crow_home, model, monkeypatch, agent=write_agent(block, tmp_path)) as agent:
            done = await agent.run("note it, then find it", cwd=str(tmp_path), permissions=allow)
    assert done.text == "Found it." and asked == ["add_note"]  # only the edit asked; the search is read-only
    assert (tmp_path / "notes.txt").read_text() == "milk is gone\n"
    assert [m["content"] for m in done.messages if m["role"] == "tool"] == ["Noted.", '["milk is gone"]']
    assert "notes.txt" in model.requests[0]["messages"][0]["content"]


def scratch(tmp_path: Path, base_url: str) -> tuple[Path, dict[str, str]]:
    """A directory as after the README's first command (its .venv/bin runs this crow), and the environment of
    a user whose model is set up (a scripted one) and whose crow home is empty."""
    work = tmp_path / "work"
    (work / ".venv" / "bin").mkdir(parents=True)
    python = spawn.python()
    (work / ".venv" / "bin" / "python").symlink_to(python)
    launcher = work / ".venv" / "bin" / "crow"
    launcher.write_text(f'#!/bin/sh\nexec "{python}" -m crow "$@"\n')
    launcher.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CROW_"))}
    home = tmp_path / "crow-home"
    home.mkdir()
    return work, {**env, "CROW_HOME": str(home), "OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": base_url}


@pytest.mark.parametrize("block", SCRIPTS, ids=ids(SCRIPTS))
def test_python_script_blocks_run(block, tmp_path):
    with ScriptedModel(default=Reply(text="ok")) as model:
        work, env = scratch(tmp_path, model.base_url)
        (work / "block.py").write_text(block.body)
        done = subprocess.run([spawn.python(), "block.py"], cwd=work, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr


SHELL = runnable("sh")
ANSWER = "It reads files and answers."
EXPECTED = {  # what a block shows on screen, and the files it leaves, beyond exiting 0
    '--text "Hello from the scripted model"': (["Hello from the scripted model"], {}),
    "demo.json": (["Writing hello.txt.", "Done: hello.txt says hi."], {"hello.txt": "hi\n"}),
    "crow setup --provider": (["Stored custom", "model scripted-model", "nothing broken"], {}),
    "Hello over the Messages API": (["Hello over the Messages API"], {}),
    "Hello over the Responses API": (["Hello over the Responses API"], {}),
    "crow sessions": ([ANSWER, '{"type": "stop", "stop_reason": "end_turn"', "What does this project do?"], {}),
}


@pytest.mark.parametrize("block", SHELL, ids=ids(SHELL))
def test_shell_blocks_run_for_real(block, tmp_path):
    with ScriptedModel(default=Reply(text=ANSWER)) as model:
        work, env = scratch(tmp_path, model.base_url)
        wrapped = "set -e\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + block.body
        status, screen = run_in_terminal(wrapped, work, env)
    assert status == 0, screen
    shown, files = next((want for key, want in EXPECTED.items() if key in block.body), ([], {}))
    for text in shown:
        assert text in screen, f"{text!r} is not on the screen:\n{screen}"
    for name, content in files.items():
        assert (work / name).read_text() == content


def test_trying_crow_without_a_model_account_works_pasted_top_to_bottom(tmp_path):
    """terminal.md's try-it blocks, one after the other in one shell, as written (no port of the test's), by a
    user with no model key: each runs its own scripted model and stops it, so nothing races or collides."""
    page = ROOT / "docs" / "terminal.md"
    section = page.read_text().split("## Try crow without a model account", 1)[1].split("\n## ", 1)[0]
    blocks = [b for b in read_blocks(page) if b.lang == "sh" and b.body in section]
    assert len(blocks) == 2
    work, env = scratch(tmp_path, "unused")
    env = {k: v for k, v in env.items() if not k.startswith("OPENAI_")}
    status, screen = run_in_terminal("set -e\n" + "".join(block.body for block in blocks), work, env)
    assert status == 0, screen
    for text in ("Hello from the scripted model", "Writing hello.txt.", "Done: hello.txt says hi."):
        assert text in screen, f"{text!r} is not on the screen:\n{screen}"
    assert (work / "hello.txt").read_text() == "hi\n"


def run_in_terminal(script: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """bash runs the script under a terminal; each permission question is answered `y`."""
    child = pexpect.spawn("bash", ["-c", script], cwd=str(cwd), env={**env, "TERM": "xterm-256color"},
                          encoding="utf-8", timeout=60, dimensions=(50, 250))  # fmt: skip
    screen = []
    while child.expect([r"\[N\] reject: ", pexpect.EOF]) == 0:
        screen.append(child.before + child.after)
        child.sendline("y")
    screen.append(child.before)
    child.close()
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", "".join(screen))  # rich's styles
    return child.exitstatus if child.exitstatus is not None else -(child.signalstatus or 0), plain
