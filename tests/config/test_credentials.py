"""$CROW_HOME/credentials.toml refused or fixed with one clear line: a symlink (never followed, neither
read nor written through), one other users can read, one another user owns, a damaged one; the stored
values as the last source (after the environment and config.toml); the key redacted like the others."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from support.helpers import crow_command

from crow_acp.config import load_config
from crow_acp.config.credentials import StoredCredentials, load_credentials, save_credentials
from crow_acp.errors import ConfigError

KEY = "sk-stored-0123456789abc"
STORED = StoredCredentials("openrouter", "chat", "https://openrouter.ai/api/v1", "some/model", KEY)


def keyless_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "CROW_"))}
    return {**env, "CROW_HOME": str(home)}


def crow_run_line(home: Path, tmp_path: Path) -> tuple[int, str]:
    done = subprocess.run(
        crow_command("run", "hi", "--cwd", str(tmp_path)), env=keyless_env(home), capture_output=True, text=True
    )
    return done.returncode, done.stderr


def test_a_symlink_is_refused_and_never_written_through(crow_home, tmp_path):
    target = tmp_path / "elsewhere.toml"
    target.write_text("precious\n")
    os.symlink(target, crow_home / "credentials.toml")
    with pytest.raises(ConfigError, match=r"credentials.toml: is a symlink, which crow never follows"):
        load_credentials(crow_home)
    status, stderr = crow_run_line(crow_home, tmp_path)
    assert status == 3 and stderr.count("\n") == 1 and "is a symlink" in stderr
    save_credentials(crow_home, STORED)  # replaces the link itself
    assert target.read_text() == "precious\n"
    assert not (crow_home / "credentials.toml").is_symlink()
    assert load_credentials(crow_home) == STORED


def test_one_other_users_can_read_is_refused_with_the_fix(crow_home, tmp_path):
    path = save_credentials(crow_home, STORED)
    path.chmod(0o644)
    status, stderr = crow_run_line(crow_home, tmp_path)
    assert status == 3
    assert stderr == f"crow: {path}: other users can read it (mode 644), so crow refuses it: `chmod 600 {path}`\n"
    path.chmod(0o600)
    assert load_credentials(crow_home) == STORED


def test_one_another_user_owns_is_refused(crow_home):
    path = save_credentials(crow_home, STORED)
    os.chown(path, 65534, 65534)  # the suite runs as root in CI and here
    with pytest.raises(ConfigError, match="belongs to another user"):
        load_credentials(crow_home)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"provider = \n", "damaged (Invalid value"),
        (b"\xff\xfe", "damaged ('utf-8' codec"),
        (b'provider = "openai"\napi = "chat"\nbase_url = "https://x/v1"\nmodel = "m"\ncolour = "red"\n', "unknown key"),
        (b'provider = "mistral"\napi = "chat"\nbase_url = "https://x/v1"\nmodel = "m"\n', "`provider` must be"),
        (b'provider = "openai"\napi = "chat"\nbase_url = "file:///etc"\nmodel = "m"\n', "`base_url` must start"),
        (b'provider = "openai"\napi = "chat"\nbase_url = "https://x/v1"\n', "`model` must be a non-empty"),
        (b"", "`api` must be a non-empty string"),
    ],
)
def test_a_damaged_file_is_one_line_naming_it_and_the_fix(crow_home, content, why):
    path = crow_home / "credentials.toml"
    path.write_bytes(content)
    path.chmod(0o600)
    with pytest.raises(ConfigError) as damaged:
        load_credentials(crow_home)
    line = str(damaged.value)
    assert line.startswith(f"{path}: ") and why in line and "\n" not in line
    assert line.endswith(f"run `crow setup` again, or delete {path}")


def test_the_stored_values_come_last(crow_home, monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CROW_MODEL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    save_credentials(crow_home, STORED)
    config = load_config(crow_home)
    profile = config.profile()
    assert (profile.base_url, profile.model, config.api_key()) == (STORED.base_url, "some/model", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-environment-0123")
    assert load_config(crow_home).api_key() == "sk-environment-0123"
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://other.example/v1")
    elsewhere = load_config(crow_home)
    assert elsewhere.profile().base_url == "https://other.example/v1"
    assert elsewhere.api_key() == "none"  # the stored key is never sent to a URL it was not stored for
    monkeypatch.delenv("OPENAI_BASE_URL")
    (crow_home / "config.toml").write_text('model = "m2"\n')
    assert load_config(crow_home).profile().model == "m2"
    assert load_config(crow_home, model="m3").profile().model == "m3"


def test_the_stored_key_is_redacted_and_kept_from_commands(crow_home, monkeypatch):
    from crow_acp.util.secrets import child_env, protect, redact

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    save_credentials(crow_home, STORED)
    protect(load_config(crow_home))
    assert redact(f"the key is {KEY}") == "the key is [redacted key]"
    assert KEY not in repr(STORED) and KEY not in str(child_env())
