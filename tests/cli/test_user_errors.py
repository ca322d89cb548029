"""A user's mistake ends in one `crow: ...` line and a documented exit status, never a traceback."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from support.helpers import crow_command, crow_env

from crow_acp.testing import Fault, Reply, ScriptedModel

UNUSED_URL = "http://127.0.0.1:9/v1"  # nothing answers: these runs must stop before any model call


def crow(env: dict[str, str], *args: str, cwd: Path | None = None, module: str = "crow") -> subprocess.CompletedProcess:
    return subprocess.run(
        crow_command(*args) if module == "crow" else [sys.executable, "-m", module, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=90,
    )


def one_line(done: subprocess.CompletedProcess, status: int, prefix: str = "crow: ") -> str:
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == status, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(prefix), done.stderr
    assert done.stdout == ""
    return lines[0].removeprefix(prefix)


@pytest.fixture
def env(crow_home: Path) -> dict[str, str]:
    return crow_env(crow_home, UNUSED_URL)


def agent_file(tmp_path: Path, source: str) -> str:
    path = tmp_path / "my_agent.py"
    path.write_text(source)
    return f"{path}:build"


def test_an_unknown_session_id(env, tmp_path):
    message = one_line(crow(env, "run", "hi", "--session", "no-such-id", "--cwd", str(tmp_path)), 2)
    assert message == "no stored session 'no-such-id' (`crow sessions` lists them)"


@pytest.mark.parametrize("command", ["acp", "run"])
def test_an_agent_file_that_fails_to_import(env, tmp_path, command):
    spec = agent_file(tmp_path, "x = 1\ny = x / 0\n")
    args = ["acp", "--agent", spec] if command == "acp" else ["run", "hi", "--agent", spec, "--cwd", str(tmp_path)]
    message = one_line(crow(env, *args), 3)
    assert (
        message == f"--agent: {tmp_path / 'my_agent.py'} failed to import: "
        "ZeroDivisionError: division by zero (my_agent.py, line 2)"
    )


def test_an_agent_whose_build_raises(env, tmp_path):
    spec = agent_file(tmp_path, "def build():\n    raise RuntimeError('no model configured')\n")
    message = one_line(crow(env, "acp", "--agent", spec), 3)
    assert message == f"--agent {spec}: build() raised RuntimeError: no model configured (my_agent.py, line 2)"


def test_an_agent_file_with_a_syntax_error(env, tmp_path):
    spec = agent_file(tmp_path, "def build(:\n")
    assert "failed to import: SyntaxError" in one_line(crow(env, "acp", "--agent", spec), 3)


def test_a_module_that_does_not_exist(env):
    assert (
        one_line(crow(env, "acp", "--agent", "no_such_module_xyz:build"), 3)
        == "--agent: no module named 'no_such_module_xyz'"
    )


def test_a_missing_or_file_cwd_is_refused(env, tmp_path):
    assert (
        one_line(crow(env, "run", "hi", "--cwd", str(tmp_path / "gone")), 2)
        == f"--cwd {tmp_path / 'gone'}: no such directory"
    )
    (tmp_path / "file").write_text("")
    assert one_line(crow(env, "run", "hi", "--cwd", str(tmp_path / "file")), 2).endswith("not a directory")


def test_a_relative_cwd_is_resolved(crow_home, tmp_path):
    (tmp_path / "sub").mkdir()
    with ScriptedModel([Reply(text="ok")]) as model:
        done = crow(crow_env(crow_home, model.base_url), "run", "hi", "--cwd", "sub", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok\n"


def test_a_config_error_stops_crow_run(env, crow_home, tmp_path):
    (crow_home / "config.toml").write_text("[timeouts]\nmodle = 5\n")
    message = one_line(crow(env, "run", "hi", "--cwd", str(tmp_path)), 3)
    assert message == f"{crow_home / 'config.toml'}: `[timeouts]`: unknown key `modle`; did you mean `model`?"


@pytest.mark.parametrize("prompt", ["", "  \n"])
def test_an_empty_prompt_is_refused(env, tmp_path, prompt):
    message = one_line(crow(env, "run", prompt, "--cwd", str(tmp_path)), 2)
    assert message.startswith("the prompt is empty")


def test_the_scripted_models_port_in_use(env):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = crow(env, "--port", str(port), module="crow_acp.testing")
    message = one_line(done, 1, prefix="crow_acp.testing: ")
    assert message == f"cannot listen on 127.0.0.1:{port}: the port is already in use; choose another --port"


def test_what_an_agent_module_prints_goes_to_stderr_not_the_wire(env, tmp_path):
    spec = agent_file(
        tmp_path,
        "print('hello from import')\nimport sys\nfrom crow_acp import AcpAgent\n\ndef build():\n"
        "    print('hello from build', 'rich' in sys.modules)\n    return AcpAgent()\n",
    )
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    done = subprocess.run(
        [sys.executable, "-m", "crow", "acp", "--agent", spec],
        env=env,
        capture_output=True,
        text=True,
        input=json.dumps(initialize) + "\n",
        timeout=90,
    )
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["id"] == 1, done.stdout
    assert "hello from import" in done.stderr
    assert "hello from build False" in done.stderr, "crow acp's start-up path does not import rich"


ENV_READ = re.compile(
    r"""(?:environ\.get\(|environ\[|getenv\(|api_key_env: str = Field\()\s*["']([A-Z][A-Z0-9_]*)["']"""
)
PACKAGES = ("crow", "crow_acp", "crow_prompt", "crow_skills", "crow_compact")


def test_help_lists_every_environment_variable_crow_reads(env):
    root = Path(__file__).resolve().parents[2]
    sources = [path for package in PACKAGES for path in (root / package).rglob("*.py") if "testing" not in path.parts]
    read = {name for path in sources for name in ENV_READ.findall(path.read_text())}
    assert {"CROW_DATABASE_URL", "CROW_SERVE_TOKEN", "CROW_HOST_ID", "OPENAI_API_KEY"} <= read, "the scan finds them"
    help_text = crow(env, "--help").stdout
    assert [name for name in sorted(read) if name not in help_text] == []


def test_version_and_help(env):
    assert crow(env, "--version").stdout.startswith("crow ")
    help_text = crow(env, "--help").stdout
    for needle in (
        "OPENAI_API_KEY",
        "CROW_HOME",
        "CROW_LOG_LEVEL",
        "config.toml",
        "sessions.db",
        "logs/crow.log",
        "skills/",
        "exit statuses",
        "130",
    ):
        assert needle in help_text, needle


def test_a_401_names_the_variable_the_profile_reads_and_the_error_is_logged(crow_home, tmp_path):
    (crow_home / "config.toml").write_text('model = "p"\nmax_retries = 0\n[models.p]\napi_key_env = "MY_KEY"\n')
    with ScriptedModel([Fault(401, "bad key")]) as model:
        env = {**crow_env(crow_home, model.base_url), "MY_KEY": "wrong"}
        done = crow(env, "run", "hi", "--cwd", str(tmp_path))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert f"crow: The model endpoint ({model_url(done)}) rejected the API key (401). Check MY_KEY." in done.stderr
    log = (crow_home / "logs" / "crow.log").read_text()
    assert "turn failed: The model endpoint" in log and "Check MY_KEY" in log


def model_url(done: subprocess.CompletedProcess) -> str:
    return done.stderr.split("The model endpoint (", 1)[1].split(")", 1)[0]


def test_verbose_shows_the_agents_logs(crow_home, tmp_path):
    with ScriptedModel(default=Reply(text="ok")) as model:
        env = {**crow_env(crow_home, model.base_url), "CROW_LOG_LEVEL": "DEBUG"}
        quiet = crow(env, "run", "hi", "--cwd", str(tmp_path))
        loud = crow(env, "run", "hi", "-v", "--cwd", str(tmp_path))
        odd = crow({**env, "CROW_LOG_LEVEL": "LOUD"}, "run", "hi", "--cwd", str(tmp_path))
    assert quiet.stdout == loud.stdout == "ok\n"
    assert odd.returncode == 0
    assert "crow: warning: CROW_LOG_LEVEL='LOUD' is not one of DEBUG, INFO, WARNING, ERROR; using INFO" in odd.stderr
    assert " DEBUG " not in quiet.stderr and " DEBUG " in loud.stderr


def test_a_base_url_without_a_scheme_is_refused_before_any_model_call(crow_home, tmp_path):
    with ScriptedModel(default=Reply(text="ok")) as model:
        url = model.base_url
        bare = url.removeprefix("http://")
        from_env = crow(crow_env(crow_home, bare), "run", "hi", "--cwd", str(tmp_path))
        (crow_home / "config.toml").write_text(f'[models.default]\nbase_url = "{bare}"\n')
        from_profile = crow(crow_env(crow_home, url), "run", "hi", "--cwd", str(tmp_path))
    fix = f"must start with http:// or https://, got {bare!r}; did you mean {url!r}?"
    assert one_line(from_env, 3) == f"OPENAI_BASE_URL {fix}"
    assert one_line(from_profile, 3) == f"{crow_home / 'config.toml'}: `[models.default]` `base_url`: {fix}"
    assert model.requests == []


def test_a_404_for_the_route_names_the_likely_fix_and_is_not_retried(crow_home, tmp_path):
    with ScriptedModel([Fault(404, "Not Found"), Fault(404, "The model `gpt-5` does not exist")]) as model:
        url = model.base_url
        no_v1 = crow(crow_env(crow_home, url.removesuffix("/v1")), "run", "hi", "--cwd", str(tmp_path))
        route = crow(crow_env(crow_home, url), "run", "hi", "--cwd", str(tmp_path))
        unknown_model = crow(crow_env(crow_home, url), "run", "hi", "--cwd", str(tmp_path))
        requests = len(model.requests)
    base = url.removesuffix("/v1")
    assert f"crow: The model endpoint ({base}) answered 404 for /chat/completions: does the base URL end in /v1?" in (
        no_v1.stderr
    )
    assert f"crow: The model endpoint ({url}) answered 404 for /v1/chat/completions: is this" in route.stderr
    assert f"crow: The model endpoint ({url}) answered HTTP 404: The model `gpt-5` does not exist" in (
        unknown_model.stderr
    )
    assert no_v1.returncode == route.returncode == unknown_model.returncode == 1
    assert requests == 2  # one each: a 404 is not retried
    assert "Retrying request" not in (crow_home / "logs" / "crow.log").read_text()


def test_a_profile_naming_the_openai_api_without_a_key_fails_as_no_config_does(crow_home, tmp_path):
    env = {**crow_env(crow_home, ""), "OPENAI_API_KEY": ""}
    no_config = one_line(crow(env, "run", "hi", "--cwd", str(tmp_path)), 3)
    config = 'model = "p"\nmax_retries = 5\n[models.p]\nbase_url = "https://api.openai.com/v1"\n'
    (crow_home / "config.toml").write_text(config)
    assert one_line(crow(env, "run", "hi", "--cwd", str(tmp_path)), 3) == no_config
    assert no_config.startswith("No model API key: set OPENAI_API_KEY in the environment")
