"""A HOME with planted secrets and one prompt of run_command calls in it, for the sandbox tests (tests/editor/)."""

from __future__ import annotations

import shutil
import tempfile
import weakref
from pathlib import Path

import anyio
from acp.schema import ClientCapabilities

from crow_acp.testing import Reply, ScriptedModel, ToolCall
from support.editor_support import results
from support.helpers import RecordingClient, crow_env, text
from support.hosted import hosted_crow

SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- planted"


class Home:
    def __init__(self, tmp_path: Path) -> None:
        # Not below /tmp: the sandbox's private /tmp would hide the home whatever crow hides in it.
        base = Path(tempfile.mkdtemp(prefix="crow-sandbox-home-", dir="/var/tmp"))
        weakref.finalize(self, shutil.rmtree, base, True)
        self.home = base / "user"
        self.crow = self.home / ".crow"
        self.work = self.home / "project"
        for path in (self.crow, self.work, self.home / ".ssh"):
            path.mkdir(parents=True)
        (self.home / ".ssh" / "id_ed25519").write_text(SECRET)
        (self.home / ".netrc").write_text("machine x password hunter2\n")
        (self.home / ".git-credentials").write_text("https://u:ghp_gitcred@github.com\n")
        (self.home / ".npmrc").write_text("//registry.npmjs.org/:_authToken=npm_token\n")

    def config(self, text: str) -> None:
        (self.crow / "config.toml").write_text(text)

    def env(self, base_url: str, **extra: str) -> dict[str, str]:
        return crow_env(self.crow, base_url, HOME=str(self.home), OPENAI_API_KEY="sk-model-key-123", **extra)


def run(command: str, call_id: str, **args: object) -> ToolCall:
    return ToolCall("run_command", {"command": command, **args}, id=call_id)


async def drive(
    home: Home,
    calls: list[ToolCall],
    *,
    mode: str = "ask",
    client: RecordingClient | None = None,
    capabilities: ClientCapabilities | None = None,
    cwd: Path | None = None,
    **env: str,
) -> tuple[RecordingClient, ScriptedModel]:
    """One prompt in which the model makes `calls` one after another; then a second prompt, answered."""
    client = client or RecordingClient()
    cwd = cwd or home.work
    script = [Reply(tool_calls=[call]) for call in calls] + [Reply(text="done"), Reply(text="still here")]
    async with ScriptedModel(script) as model:
        async with hosted_crow(client, home.env(model.base_url, **env), cwd=str(cwd), capabilities=capabilities) as (
            conn,
            _,
        ):
            with anyio.fail_after(120):
                sid = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
                await conn.set_session_mode(session_id=sid, mode_id=mode)
                assert (await conn.prompt(session_id=sid, prompt=[text("go")])).stop_reason == "end_turn"
                assert (await conn.prompt(session_id=sid, prompt=[text("again")])).stop_reason == "end_turn"
    return client, model


def told(model: ScriptedModel) -> dict[str, str]:
    return results(model)


def without_bwrap(tmp_path: Path) -> str:
    """A PATH with the usual tools but no bwrap."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "sh", "env", "git", "python3", "cat", "ls"):
        if found := shutil.which(tool):
            (bin_dir / tool).symlink_to(found)
    return str(bin_dir)
