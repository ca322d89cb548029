"""The session store, checked where a user meets it: `crow check` names the store in use (the PostgreSQL URL
without its password) and fails when it does not answer; `crow run` then stops with one line, status 3."""

from __future__ import annotations

import os
import subprocess

import pytest
from support.helpers import crow_command, crow_env
from support.postgres_server import PostgresServer, binaries

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


@pytest.fixture(params=["sqlite", "postgres"])
def store_env(request, crow_home):
    """CROW_DATABASE_URL for the store under test ({} for SQLite) and a store of it, in this process."""
    from crow_acp.store.postgres import PostgresStore
    from crow_acp.store.sqlite import SqliteStore

    if request.param == "sqlite":
        return {}, lambda: SqliteStore(crow_home / "sessions.db")
    url = request.getfixturevalue("postgres").new_database()
    return {"CROW_DATABASE_URL": url}, lambda: PostgresStore(url, connections=1)


def test_crow_check_reports_the_schema_version_and_live_leases(store_env, crow_home, tmp_path):
    """A lease this test holds shows with its holder; one released no longer does."""
    import asyncio

    from crow_acp.store import Owner, SessionRecord

    extra, open_store = store_env
    env = crow_env(crow_home, "http://127.0.0.1:9/v1", **extra)

    async def hold() -> subprocess.CompletedProcess:
        store = open_store()
        for sid in ("held-session", "freed-session"):
            store.create(SessionRecord(sid, str(tmp_path), None, 0.0, 0.0, {}))
            await store.acquire(sid)
        await store.release("freed-session")
        try:
            return await asyncio.to_thread(crow, env, "check", "--cwd", str(tmp_path))
        finally:
            await store.close()

    held = asyncio.run(hold())
    after = crow(env, "check", "--cwd", str(tmp_path))
    lines = held.stdout.splitlines()
    start = lines.index("session store")
    assert lines[start + 2 : start + 5] == [
        "  schema     version 3",
        "  leases     1 live",
        lines[start + 4],
    ], held.stdout
    holder = lines[start + 4].split()
    assert holder[:6] == ["held-session:", "pid", str(os.getpid()), "on", Owner.this_process().host + ",", "renewed"], (
        holder
    )
    assert lines[start + 4].endswith(" s") and "expires in" in lines[start + 4]
    assert "freed-session" not in held.stdout
    after_lines = after.stdout.splitlines()
    assert "  leases     none live" in after_lines, "close() released the lease"
    assert "Traceback" not in held.stderr + after.stderr


def test_a_prefix_with_like_wildcards_is_matched_literally(store_env, crow_home, tmp_path):
    """The prefix lookup runs in the database, on both stores: `%` and `_` in it match only themselves."""
    import asyncio

    from crow_acp.history import StoredMessage
    from crow_acp.store import SessionRecord

    extra, open_store = store_env

    async def seed() -> tuple[list[str], list[str], list[str]]:
        store = open_store()
        for sid in ("50%_off-a", "50ab_off-b", "50%xoff-c"):
            store.create(SessionRecord(sid, str(tmp_path), None, 0.0, 0.0, {}))
            store.append(sid, StoredMessage({"role": "user", "content": "hi"}, row_id=1))
        try:
            found = [[r.id for r in await store.find_prefix(p)] for p in ("50%_off", "50%", "50AB_")]
        finally:
            await store.close()
        return found[0], found[1], found[2]

    exact, percent, upper = asyncio.run(seed())
    assert exact == ["50%_off-a"]
    assert sorted(percent) == ["50%_off-a", "50%xoff-c"]
    assert upper == [], "ids are matched with their case"
    shown = crow(crow_env(crow_home, "http://127.0.0.1:9/v1", **extra), "sessions", "show", "50%_of")
    assert shown.returncode == 0 and shown.stdout.startswith("session 50%_off-a"), shown.stderr
