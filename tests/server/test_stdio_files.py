"""crow acp with stdin or stdout that the event loop cannot watch: /dev/null, a regular file."""

from __future__ import annotations

import json
import os
import subprocess

from support.helpers import crow_command, crow_env

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}


def run(env: dict[str, str], stdin, stdout) -> subprocess.CompletedProcess:
    return subprocess.run(crow_command("acp"), env=env, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE,
                          timeout=60)  # fmt: skip


def test_requests_from_a_file_are_answered_and_its_end_ends_crow(tmp_path):
    env = crow_env(tmp_path / "home", "http://127.0.0.1:9/v1")
    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps(INITIALIZE) + "\n")
    with requests.open("rb") as stdin:
        done = run(env, stdin, subprocess.PIPE)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.decode().splitlines()[0])
    assert answer["id"] == 1 and answer["result"]["protocolVersion"] == 1


def test_dev_null_is_an_editor_that_closed_stdin(tmp_path):
    env = crow_env(tmp_path / "home", "http://127.0.0.1:9/v1")
    done = run(env, subprocess.DEVNULL, subprocess.PIPE)
    assert done.returncode == 0 and done.stdout == b"", done.stderr


def test_stdout_to_a_file_is_a_one_line_error(tmp_path):
    env = crow_env(tmp_path / "home", "http://127.0.0.1:9/v1")
    with (tmp_path / "out.jsonl").open("wb") as stdout:
        done = run(env, subprocess.DEVNULL, stdout)
    assert done.returncode == 2
    assert done.stderr.decode().startswith("crow: crow acp writes ACP to a pipe") and b"Traceback" not in done.stderr


def test_a_closed_stdout_is_the_same_one_line_error(tmp_path):
    env = crow_env(tmp_path / "home", "http://127.0.0.1:9/v1")
    done = subprocess.run(crow_command("acp"), env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          preexec_fn=lambda: os.close(1), timeout=60)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.decode().startswith("crow: crow acp writes ACP to a pipe") and b"Traceback" not in done.stderr
