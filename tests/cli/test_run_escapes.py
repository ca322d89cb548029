"""`crow run` into a file or pipe escapes terminal control sequences as it does on a terminal, in the
answer and in tool output; `--raw` keeps the answer as the model sent it; `--format json` stays JSON."""

from __future__ import annotations

import json
import re
import subprocess

import anyio
import pytest
from support.helpers import crow_command, crow_env, echo_toml, write_config

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio
HOSTILE = (
    "a\x1b]52;c;cm0gLXJmIH4=\x07"  # OSC 52: write the clipboard
    "b\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\"  # OSC 8: a hyperlink
    "c\x1b[2J\x1b[31m"  # CSI: clear the screen, colour
    "d\x9b2J\x9d0;title\x9c"  # the same as C1 controls
    "e\x1b\x07\x7f!"  # a bare ESC, BEL, DEL
)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


async def run(crow_home, tmp_path, *flags: str) -> tuple[str, str, str]:
    """(stdout, stderr, the answer the model sent) of one `crow run --yes` into files."""
    write_config(crow_home, echo_toml())
    script = [Reply(text="x" + HOSTILE, tool_calls=[ToolCall("echo__echo", {"text": HOSTILE})]), Reply(text=HOSTILE)]
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    async with ScriptedModel(script) as model:
        with anyio.fail_after(60), out.open("wb") as stdout, err.open("wb") as stderr:
            await anyio.run_process(
                crow_command("run", "go", "--yes", "--cwd", str(tmp_path), *flags),
                env=crow_env(crow_home, model.base_url),
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                check=True,
            )
    return out.read_text(), err.read_text(), "x" + HOSTILE + "\n" + HOSTILE + "\n"


async def test_a_file_gets_no_control_sequences(crow_home, tmp_path):
    out, err, _ = await run(crow_home, tmp_path)
    assert not CONTROL.search(out) and not CONTROL.search(err)
    assert "a\\x1b]52;c;cm0gLXJmIH4=\\x07b" in out and "d\\x9b2J" in out  # shown, not obeyed
    assert "a\\x1b]52;c;cm0gLXJmIH4=\\x07b" in err  # the tool's output too


async def test_raw_keeps_them_in_the_answer(crow_home, tmp_path):
    out, err, answer = await run(crow_home, tmp_path, "--raw")
    assert out == answer
    assert not CONTROL.search(err)  # stderr is not the answer: still escaped


async def test_format_json_stays_json_without_raw_controls(crow_home, tmp_path):
    out, _, _ = await run(crow_home, tmp_path, "--format", "json")
    assert not CONTROL.search(out)
    events = [json.loads(line) for line in out.splitlines()]
    assert "".join(e["text"] for e in events if e["type"] == "text") == "x" + HOSTILE * 2  # escaped by JSON, kept
