"""crow's ACP registry entry (registry/agent.json, icon.svg), and crow as the registry's validator sees it.

The rules are crow's own schema (tests/registry_agent.schema.json, which names the registry commit it was
written against); the validator's check is written here from what its `run_auth_check` does at that
commit: it starts the agent with only a few variables (PATH, TMPDIR, ...), a fresh HOME and TERM=dumb,
sends one `initialize` with terminal auth advertised in `_meta`, reads the first line of stdout as the
answer, and needs an auth method whose type (its `type`, else a `terminal-auth`/`agent-auth` key of its
`_meta`, else "agent") is "terminal" or "agent".
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from support.zod_check import problems

ROOT = Path(__file__).parents[2]
REGISTRY = ROOT / "registry"
PASSED_THROUGH = ("PATH", "TMPDIR", "TMP", "TEMP", "SSL_CERT_FILE", "SSL_CERT_DIR", "XDG_CACHE_HOME", "CI")
VALIDATOR_CAPABILITIES = {
    "terminal": True,
    "fs": {"readTextFile": True, "writeTextFile": True},
    "_meta": {"terminal_output": True, "terminal-auth": True},
}


def manifest() -> dict[str, Any]:
    return json.loads((REGISTRY / "agent.json").read_text())


def project() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_manifest_follows_the_registry_rules():
    schema = json.loads((Path(__file__).parents[1] / "registry_agent.schema.json").read_text())
    jsonschema.validate(manifest(), schema, format_checker=jsonschema.FormatChecker())


def test_the_manifest_pins_this_version_of_this_distribution_and_runs_acp():
    entry = manifest()
    package, version = entry["distribution"]["uvx"]["package"].split("@")
    assert (package, version) == (project()["name"], project()["version"])
    assert entry["version"] == project()["version"]
    assert entry["distribution"]["uvx"]["args"] == ["acp"]
    assert project()["scripts"][package] == project()["scripts"]["crow"], "uvx runs the script named like the package"
    assert entry["license"] == project()["license"]["text"]


def test_the_icon_is_16_by_16_and_every_colour_is_current_color():
    root = ET.parse(REGISTRY / manifest()["icon"]).getroot()
    assert (root.get("width"), root.get("height"), root.get("viewBox")) == ("16", "16", "0 0 16 16")
    colours = []
    for element in root.iter():
        colours += [element.get(name) for name in ("fill", "stroke", "color", "stop-color") if element.get(name)]
        colours += re.findall(r"(?:fill|stroke|color)\s*:\s*([^;]+)", element.get("style") or "")
        assert not element.tag.endswith(("style", "image", "linearGradient", "radialGradient")), element.tag
    assert colours and set(colours) <= {"currentColor", "none"}, colours


def method_type(method: dict[str, Any]) -> str:
    """The validator's reading of an auth method's type."""
    meta = method.get("_meta") if isinstance(method.get("_meta"), dict) else {}
    if method.get("type"):
        return method["type"]
    if "terminal-auth" in meta:
        return "terminal"
    return "agent"


def registry_initialize(command: list[str], home: Path, capabilities: dict[str, Any]) -> dict[str, Any]:
    env = {name: os.environ[name] for name in PASSED_THROUGH if os.environ.get(name)}
    env |= {"TERM": "dumb", "HOME": str(home)}
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": 1, "clientInfo": {"name": "ACP Registry Validator", "version": "1.0.0"},
        "clientCapabilities": capabilities}}  # fmt: skip
    proc = subprocess.Popen(command, cwd=home, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, "no initialize answer in 60 s"
        return json.loads(proc.stdout.readline())  # the first line: anything else on stdout fails the check
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def installed_script() -> list[str]:
    script = Path(sys.executable).parent / "crow-agent"
    assert script.exists(), f"{script}: the console script named like the distribution is not installed"
    return [str(script), "acp"]


def test_the_registry_validator_finds_a_terminal_method_on_the_installed_script(tmp_path):
    answer = registry_initialize(installed_script(), tmp_path, VALIDATOR_CAPABILITIES)
    result = answer["result"]
    methods = result["authMethods"]
    assert [method_type(m) for m in methods] == ["terminal"]
    (method,) = methods
    assert method["args"] == ["setup"] and method["name"] and method["description"]
    legacy = method["_meta"]["terminal-auth"]
    assert set(legacy) == {"command", "args", "label"}
    assert legacy["args"][-1] == "setup" and os.access(legacy["command"], os.X_OK)
    assert result["agentCapabilities"]["auth"] == {"logout": {}}
    assert problems([("zInitializeResponse", result)]) == []


@pytest.mark.parametrize("capabilities", [{}, {"auth": {"terminal": True}}])
def test_the_method_is_a_terminal_one_only_for_a_client_that_runs_terminals(tmp_path, capabilities):
    answer = registry_initialize(installed_script(), tmp_path, capabilities)
    (method,) = answer["result"]["authMethods"]
    assert method_type(method) == ("terminal" if capabilities else "agent")
    assert method["id"] == "crow-setup"
    assert problems([("zInitializeResponse", answer["result"])]) == []
