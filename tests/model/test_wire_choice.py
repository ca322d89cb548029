"""Which wire a profile speaks: `api`, CROW_API, a stored value, then inference; a wrong value is one line."""

from __future__ import annotations

import subprocess
import sys

import pytest
from support.helpers import crow_env, write_config

from crow_acp.config import ModelProfile, load_config
from crow_acp.errors import ConfigError
from crow_acp.model.wires import choose_api


@pytest.mark.parametrize(
    ("profile", "env", "wire"),
    [
        (ModelProfile(model="gpt-5"), {}, "chat"),
        (ModelProfile(model="claude-sonnet-4-5"), {"ANTHROPIC_API_KEY": "k"}, "anthropic"),
        (ModelProfile(model="claude-sonnet-4-5"), {"ANTHROPIC_API_KEY": "k", "OPENAI_BASE_URL": "http://x/v1"}, "chat"),
        (ModelProfile(model="claude-sonnet-4-5"), {}, "chat"),  # no Anthropic key: an OpenAI-compatible proxy
        (ModelProfile(model="any", base_url="https://api.anthropic.com/v1"), {}, "anthropic"),
        (ModelProfile(model="gpt-5"), {"CROW_API": "responses"}, "responses"),
        (ModelProfile(model="gpt-5", api="chat"), {"CROW_API": "responses"}, "chat"),  # the profile says
    ],
)
def test_the_wire_is_chosen_in_order(profile, env, wire):
    assert choose_api(profile, env) == wire


def test_a_stored_value_comes_after_the_environment():
    assert choose_api(ModelProfile(model="m"), {}, stored="anthropic") == "anthropic"
    assert choose_api(ModelProfile(model="m"), {"CROW_API": "chat"}, stored="anthropic") == "chat"
    with pytest.raises(ConfigError, match="api: 'soap' is not a model wire; choose one of chat, responses, anthropic"):
        choose_api(ModelProfile(model="m"), {}, stored="soap")


def test_a_wrong_crow_api_is_one_line_naming_the_key_and_the_choices(crow_home, monkeypatch):
    monkeypatch.setenv("CROW_API", "grpc")
    with pytest.raises(ConfigError) as wrong:
        load_config(crow_home)
    assert str(wrong.value) == "CROW_API: 'grpc' is not a model wire; choose one of chat, responses, anthropic"


def test_a_wrong_profile_api_is_one_line_from_crow_check(crow_home):
    write_config(crow_home, '[models.m]\nmodel = "x"\napi = "soap"\n')
    env = crow_env(crow_home, "http://127.0.0.1:9/v1")
    done = subprocess.run([sys.executable, "-m", "crow", "check"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    [line] = [line for line in (done.stderr + done.stdout).splitlines() if "`api`" in line]
    assert line.endswith("`[models.m]` `api`: Input should be 'chat', 'responses' or 'anthropic' (got 'soap')")


def test_the_wire_crow_setup_stored_is_the_one_used(crow_home, monkeypatch):
    from crow_acp.config.credentials import StoredCredentials, save_credentials
    from crow_acp.model.wires import make_client

    for name in ("CROW_API", "CROW_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    save_credentials(crow_home, StoredCredentials("openai", "responses", "https://api.openai.com/v1", "gpt-5", "sk-x"))
    assert type(make_client(load_config(crow_home))).__name__ == "ResponsesModelClient"
    monkeypatch.setenv("CROW_API", "chat")  # the environment still comes first
    assert type(make_client(load_config(crow_home))).__name__ == "OpenAIModelClient"
