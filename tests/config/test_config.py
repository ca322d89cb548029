"""config.toml cannot be silently wrong: every class of mistake is an error naming the table and the key."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from crow_acp.config import load_config, resolve_command
from crow_acp.errors import ConfigError

CONFIG_PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def error_for(tmp_path: Path, text: str) -> str:
    (tmp_path / "config.toml").write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(home=tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'config.toml'}: "), "the message names the file"
    return message.split(": ", 1)[1]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[permission]\ndefault = "deny"\n', "`[permission]`: unknown table; did you mean `[permissions]`?"),
        ('modle = "gpt-4.1"\n', "`modle`: unknown key at the top level; did you mean `model`?"),
        ('[permissions]\ndefualt = "deny"\n', "`[permissions]`: unknown key `defualt`; did you mean `default`?"),
        ('[models.fast]\nmodle = "x"\n', "`[models.fast]`: unknown key `modle`; did you mean `model`?"),
        ('[mcp_servers.time]\ncomand = "x"\n', "`[mcp_servers.time]`: unknown key `comand`; did you mean `command`?"),
    ],
)
def test_an_unknown_table_or_key_names_it_and_the_closest_valid_one(tmp_path, text, expected):
    assert error_for(tmp_path, text) == expected


def test_a_misspelled_permission_policy_is_an_error_not_a_looser_policy(tmp_path):
    message = error_for(tmp_path, '[permissions.tools]\n"shell__rm" = "deni"\n')
    assert message.startswith("`[permissions.tools]` `shell__rm`: ")
    assert "did you mean 'deny'?" in message and "(got 'deni')" in message


@pytest.mark.parametrize(
    ("text", "where", "got"),
    [
        ('[timeouts]\nmodel = "600s"\n', "`[timeouts]` `model`", "'600s'"),
        ('[mcp_servers.t]\ncommand = "x"\nenabled = "no"\n', "`[mcp_servers.t]` `enabled`", "'no'"),
        ('max_steps = "many"\n', "`max_steps`", "'many'"),
        ("timeouts = 5\n", "`timeouts`", "5"),
        ('[limits]\nparallel_tool_calls = "8"\n', "`[limits]` `parallel_tool_calls`", "'8'"),
    ],
)
def test_a_wrong_type_names_the_key_and_the_value(tmp_path, text, where, got):
    message = error_for(tmp_path, text)
    assert message.startswith(where + ": ") and message.endswith(f"(got {got})")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("[timeouts]\nmodel = -1\n", "`[timeouts]` `model`"),
        ("max_steps = 0\n", "`max_steps`"),
        ("[limits]\nparallel_tool_calls = 0\n", "`[limits]` `parallel_tool_calls`"),
        ("[limits]\ntool_calls_per_reply = 0\n", "`[limits]` `tool_calls_per_reply`"),
        ("[limits]\nreply_chars = 10\n", "`[limits]` `reply_chars`"),
        ("[models.fast]\ncontext_window = 0\n", "`[models.fast]` `context_window`"),
        ("[models.fast]\ntemperature = 9.0\n", "`[models.fast]` `temperature`"),
        ('[models.fast]\nbase_url = "api.openai.com/v1"\n', "`[models.fast]` `base_url`"),
    ],
)
def test_an_impossible_value_names_the_key(tmp_path, text, where):
    assert error_for(tmp_path, text).startswith(where + ": ")


@pytest.mark.parametrize(
    "text",
    ['[mcp_servers.time]\nargs = ["x"]\n', '[mcp_servers.time]\ncommand = "a"\nurl = "http://127.0.0.1:9/mcp"\n'],
)
def test_an_mcp_server_needs_exactly_one_of_command_or_url(tmp_path, text):
    message = error_for(tmp_path, text)
    assert message == "`[mcp_servers.time]`: needs exactly one of `command` (a stdio server) or `url` (a remote server)"


def test_broken_toml_and_unreadable_files_name_the_file(tmp_path):
    assert "line 2" in error_for(tmp_path, "x = [1\nmodel = 2\n")
    (tmp_path / "config.toml").write_bytes(b'model = "\xff"\n')
    with pytest.raises(ConfigError, match=re.escape(str(tmp_path / "config.toml"))):
        load_config(home=tmp_path)


def test_the_documented_config_example_works_as_written(tmp_path, monkeypatch):
    blocks = re.findall(r"```toml\n(.*?)```", CONFIG_PAGE.read_text(), re.S)
    assert blocks, "docs/configuration.md has a config example"
    (tmp_path / "config.toml").write_text(blocks[0])
    monkeypatch.delenv("CROW_MODEL", raising=False)
    config = load_config(home=tmp_path)
    assert config.profile().model == "gpt-4.1-mini"
    assert config.permissions.tools["shell__rm"] == "deny"
    assert sorted(config.mcp_servers) == ["docs", "time"] and config.warnings() == []


def test_a_profiles_own_base_url_wins_over_openai_base_url(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.delenv("CROW_MODEL", raising=False)
    (tmp_path / "config.toml").write_text(
        'model = "own"\n[models.own]\nbase_url = "http://127.0.0.1:2/v1"\n[models.plain]\nmodel = "m"\n'
    )
    config = load_config(home=tmp_path)
    assert config.profile().base_url == "http://127.0.0.1:2/v1"
    assert load_config(home=tmp_path, model="plain").profile().base_url == "http://127.0.0.1:1/v1"


def test_without_a_key_crow_says_which_variable_the_profile_reads(tmp_path, monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "MY_KEY", "CROW_MODEL"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "config.toml").write_text('model = "p"\n[models.p]\napi_key_env = "MY_KEY"\n')
    with pytest.raises(ConfigError, match="set MY_KEY in the environment"):
        load_config(home=tmp_path).api_key()


def test_a_model_that_is_close_to_a_profile_name_is_a_warning(tmp_path, monkeypatch):
    monkeypatch.delenv("CROW_MODEL", raising=False)
    (tmp_path / "config.toml").write_text('model = "fats"\n[models.fast]\nmodel = "m"\n')
    assert load_config(home=tmp_path).warnings() == [
        "model 'fats' is not a profile in [models]; it is sent as a raw model id; did you mean 'fast'?"
    ]


def test_stdio_commands_are_also_found_next_to_crows_python(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # as when Zed starts crow with no venv on PATH
    beside = Path(sys.executable).parent / "mcp-server-time"
    assert beside.exists(), "the test extras install mcp-server-time in this environment"
    assert resolve_command("mcp-server-time") == str(beside)
    tool = tmp_path / "my-tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    assert resolve_command("my-tool") == "my-tool", "PATH first"
    assert resolve_command("~/x/server") == os.path.expanduser("~/x/server")


def test_an_invalid_log_level_falls_back_to_info_with_a_warning(tmp_path):
    code = (
        "import logging, pathlib, sys; from crow_acp.server.stdio import configure_logging; "
        "configure_logging(pathlib.Path(sys.argv[1])); print(logging.getLogger().level)"
    )
    env = {**os.environ, "CROW_LOG_LEVEL": "LOUD"}
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == str(20), "INFO"
    assert "CROW_LOG_LEVEL='LOUD' is not one of DEBUG, INFO, WARNING, ERROR; using INFO" in done.stderr
    assert "using INFO" in (tmp_path / "crow.log").read_text()


def test_crow_acp_stops_on_a_config_error_with_one_line_and_status_3(tmp_path):
    (tmp_path / "config.toml").write_text('[permission]\ndefault = "deny"\n')
    env = {**os.environ, "CROW_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "crow", "acp"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 3
    assert (
        done.stderr
        == f"crow: {tmp_path / 'config.toml'}: `[permission]`: unknown table; did you mean `[permissions]`?\n"
    )
    assert done.stdout == ""


def documented(model: type) -> set[str]:
    """The fields of a class that have a docstring right after them (read from the source: the
    config models do not ask pydantic to extract them, which costs `crow acp`'s cold start ~12 ms)."""
    import ast
    import inspect
    import itertools
    import textwrap

    body = ast.parse(textwrap.dedent(inspect.getsource(model))).body[0].body  # type: ignore[attr-defined]
    return {
        field.target.id
        for field, after in itertools.pairwise(body)
        if isinstance(field, ast.AnnAssign)
        and isinstance(field.target, ast.Name)
        and isinstance(after, ast.Expr)
        and isinstance(after.value, ast.Constant)
        and isinstance(after.value.value, str)
    }


def test_every_config_key_is_documented():
    """Adding a key means one field with a docstring; readers of config.py rely on the text."""
    from pydantic import BaseModel

    from crow_acp.config import Config, Section

    def sections(model: type[BaseModel]) -> list[type[BaseModel]]:
        found = [model]
        for field in model.model_fields.values():
            for inner in (field.annotation, *getattr(field.annotation, "__args__", ())):
                if isinstance(inner, type) and issubclass(inner, Section) and inner not in found:
                    found += sections(inner)
        return found

    missing = [
        f"{model.__name__}.{name}"
        for model in sections(Config)
        for name in model.model_fields
        if name not in documented(model)
    ]
    assert len(sections(Config)) >= 8, "the walk reaches every table"
    assert missing == []
    assert all(model.model_config.get("extra") == "forbid" for model in sections(Config))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[permissions]\nprotected = ".envrc"\n',
            "`[permissions]` `protected`: Input should be a valid list (got '.envrc')",
        ),
        ('[permissions]\nprotected = ["/etc/passwd"]\n', "must be relative to the workspace roots, without `..`"),
        ('[permissions]\nprotected = ["a/../b"]\n', "must be relative to the workspace roots, without `..`"),
        ('[permissions]\nprotected = [""]\n', "protected pattern '' is empty or holds a NUL"),
    ],
)
def test_protected_patterns_are_checked(tmp_path, text, expected):
    assert expected in error_for(tmp_path, text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[mcp_servers.t]\nurl = "http://127.0.0.1:9/mcp"\nsandbox = true\n',
            "`sandbox` is for stdio servers (`command`): a remote server runs elsewhere",
        ),
        ('[mcp_servers.t]\ncommand = "x"\nnetwork = true\n', "`network` and `writable` take effect only with"),
        ('[mcp_servers.t]\ncommand = "x"\nwritable = ["/var"]\n', "`network` and `writable` take effect only with"),
        ('[mcp_servers.t]\ncommand = "x"\nsandbox = "yes"\n', "`[mcp_servers.t]` `sandbox`"),
    ],
)
def test_an_mcp_servers_sandbox_keys_are_checked(tmp_path, text, expected):
    assert expected in error_for(tmp_path, text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[agents.x]\nenv = { A = "1" }\n', "needs exactly one of `command` (a list: the agent crow starts) or `url`"),
        ('[agents.x]\ncommand = "codex-acp"\n', "`[agents.x]` `command`: Input should be a valid list"),
        ("[agents.x]\ncommand = []\n", "`[agents.x]` `command`"),
        ('[agents.x]\nurl = "http://h/acp"\n', "must start with ws:// or wss://"),
        ('[agents.x]\nurl = "ws://h/acp"\nenv = { A = "1" }\n', "`env` is for a `command`, not for a `url`"),
        ('[agents.x]\ncommand = ["a"]\ntoken_env = "T"\n', "`token_env` is for a `url`, not for a `command`"),
        ('[agents.x]\ncomand = ["a"]\n', "`[agents.x]`: unknown key `comand`; did you mean `command`?"),
    ],
)
def test_an_agents_table_is_checked_strictly(tmp_path, text, expected):
    assert expected in error_for(tmp_path, text)


def test_member_names_a_declared_agent_or_says_which_exist(tmp_path, monkeypatch):
    from crow.patterns import member
    from crow_acp.multi.foreign import StdioTarget

    (tmp_path / "config.toml").write_text(
        '[agents.helper]\ncommand = ["helper-acp", "--x"]\nenv = { A = "1" }\n'
        '[agents.far]\nurl = "ws://127.0.0.1:9/acp"\ntoken_env = "FAR_TOKEN"\n'
    )
    config = load_config(home=tmp_path)
    helper = member("helper", config)
    assert helper.name == "helper" and helper.target == StdioTarget(["helper-acp", "--x"], {"A": "1"})
    with pytest.raises(ConfigError, match=r"no agent 'nope' in \[agents\] of config.toml \(declared: far, helper\)"):
        member("nope", config)
    monkeypatch.delenv("FAR_TOKEN", raising=False)
    with pytest.raises(ConfigError, match=r"\[agents.far\]: the token variable FAR_TOKEN is not set"):
        member("far", config)
    monkeypatch.setenv("FAR_TOKEN", "s3cret")
    assert member("far", config).target.token == "s3cret"
