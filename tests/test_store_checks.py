"""The session store, checked where a user meets it: `crow check` names the store in use (the PostgreSQL URL
without its password) and fails when it does not answer; `crow run` then stops with one line, status 3."""

from __future__ import annotations

import os
import subprocess

import pytest
from helpers import crow_command, crow_env
from postgres_server import PostgresServer, binaries

from crow_acp.testing import Reply, ScriptedModel

PASSWORD = "s3cret-pw"


@pytest.fixture
def pg():
    if binaries() is None:
        message = "PostgreSQL is not installed (apt-get install postgresql)"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    server = PostgresServer()
    with server:
        yield server


def crow(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(crow_command(*args), env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60)  # fmt: skip


def test_crow_check_and_crow_run_with_postgresql_up_then_down(pg, crow_home, tmp_path):
    url = pg.new_database().replace("postgres@", f"postgres:{PASSWORD}@")  # trust auth: the password is not needed
    shown = url.replace(PASSWORD, "***")
    with ScriptedModel([], default=Reply(text="Fine.")) as model:
        env = crow_env(crow_home, model.base_url, CROW_DATABASE_URL=url)
        up = crow(env, "check", "--cwd", str(tmp_path))
        pg.stop()
        down = crow(env, "check", "--cwd", str(tmp_path))
        run = crow(env, "run", "hi", "--cwd", str(tmp_path))
    assert up.returncode == 0, up.stdout
    assert f"  ✓ {shown} answers" in up.stdout.splitlines()
    assert f"  database   {shown}" in up.stdout.splitlines()
    assert down.returncode == 1, down.stdout
    assert f"  ✗ {shown} does not answer: cannot connect to the session database" in down.stdout
    assert run.returncode == 3, run.stderr
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"crow: the session store does not answer ({shown}): "), lines
    assert not model.requests, "no model call before the store answers"
    for text in (up.stdout, down.stdout, run.stderr):
        assert PASSWORD not in text and "Traceback" not in text
