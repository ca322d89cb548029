"""One error tree: every exception class crow defines derives from CrowError, under its group."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from pathlib import Path

import crow_acp.errors as errors

PACKAGES = ("crow", "crow_acp", "crow_skills", "crow_compact", "crow_prompt")
GROUPS = (errors.ConfigError, errors.ModelError, errors.StoreError, errors.WireError, errors.ToolError, errors.McpError)


def modules() -> Iterator[str]:
    for package in PACKAGES:
        yield package
        for info in pkgutil.walk_packages(importlib.import_module(package).__path__, f"{package}."):
            if info.name.rsplit(".", 1)[-1] != "__main__":  # running it is all it does
                yield info.name


def classes_of(owner: object, module: str) -> Iterator[type]:
    for value in vars(owner).values():
        if inspect.isclass(value) and value.__module__ == module:
            yield value
            yield from classes_of(value, module)  # nested classes too


def defined_exceptions() -> dict[str, type[BaseException]]:
    found = {}
    for name in modules():
        module = importlib.import_module(name)
        for cls in classes_of(module, name):
            if issubclass(cls, BaseException):
                found[f"{name}.{cls.__qualname__}"] = cls
    return found


def test_every_exception_crow_defines_derives_from_crow_error():
    found = defined_exceptions()
    assert len(found) >= 20  # the walk saw the packages (store, wire, editor, skills, run...)
    strays = sorted(name for name, cls in found.items() if not issubclass(cls, errors.CrowError))
    assert strays == [], f"derive these from a group in crow_acp/errors.py: {strays}"


def test_the_named_classes_sit_under_their_groups():
    from crow.exits import Exit
    from crow_acp.editor.common import Stopped
    from crow_acp.mcp.host import ServerUnavailable
    from crow_acp.plugin.blackboard import NotJsonError
    from crow_acp.server.hosted import AgentGone
    from crow_acp.store import LeaseLost, SessionBusy, StoreError
    from crow_acp.testing import ScriptError
    from crow_acp.web.run import TokenRequired
    from crow_prompt.render import PromptTemplateError
    from crow_skills import SkillError

    assert StoreError is errors.StoreError  # the store's name is the group, re-exported
    expected = {
        SessionBusy: errors.StoreError,
        LeaseLost: errors.StoreError,
        ServerUnavailable: errors.McpError,
        Stopped: errors.ToolError,
        AgentGone: errors.WireError,
        TokenRequired: errors.ConfigError,
        PromptTemplateError: errors.ConfigError,
        SkillError: errors.ConfigError,
        ScriptError: errors.ConfigError,
        errors.HookSignatureError: errors.ConfigError,
        Exit: errors.CrowError,
        NotJsonError: errors.StoreError,
    }
    for cls, group in expected.items():
        assert issubclass(cls, group), (cls, group)
    for group in GROUPS:
        assert group.__bases__ == (errors.CrowError,), group
    # What callers caught before still catches them.
    assert issubclass(SkillError, ValueError) and issubclass(ScriptError, ValueError)
    assert issubclass(errors.HookSignatureError, TypeError)


def test_errors_module_imports_nothing_from_crow():
    tree = ast.parse(Path(errors.__file__).read_text(encoding="utf-8"))
    imported = [
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    ]
    assert imported and all(name and not name.startswith("crow") for name in imported), imported
    assert not any(isinstance(node, ast.ImportFrom) and node.level for node in ast.walk(tree))
