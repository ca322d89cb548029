"""`--agent MODULE:ATTR` or `path/to/file.py:ATTR`: the user's code, loaded with one clear line on failure."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crow.exits import SETUP, Exit


def load_agent(spec: str | None, config: Any) -> Any:
    """The default agent, or MODULE:ATTR / file.py:ATTR (an agent or a zero-argument factory)."""
    if spec is None:
        from crow.presets import default_agent

        return default_agent(config)
    target, _, attr = spec.rpartition(":")
    if not target or not attr:
        raise Exit(SETUP, f"--agent wants MODULE:ATTR or path/to/file.py:ATTR, got {spec!r}")
    module = _import(target)
    value = getattr(module, attr, None)
    if value is None:
        raise Exit(SETUP, f"--agent {spec}: {target} has no attribute {attr!r}")
    from crow_acp.acp.agent import AcpAgent
    from crow_acp.multi import MultiAgent

    if not isinstance(value, (AcpAgent, MultiAgent)) and callable(value):
        try:
            value = value()  # a zero-argument factory
        except Exception as exc:  # boundary with the user's build(): one line instead of a traceback
            raise Exit(SETUP, f"--agent {spec}: {attr}() raised {_brief(exc)}") from exc
    if not isinstance(value, (AcpAgent, MultiAgent)):
        raise Exit(
            SETUP, f"--agent {spec} is not an AcpAgent or MultiAgent, nor a factory of one (got {type(value).__name__})"
        )
    return value


def _import(target: str) -> Any:
    """The user's module, from a file path or a module name."""
    from_file = target.endswith(".py")
    where, load = _file_loader(target) if from_file else (target, lambda: importlib.import_module(target))
    try:
        return load()
    except Exception as exc:  # boundary with the user's module: one line instead of a traceback
        if not from_file and isinstance(exc, ModuleNotFoundError) and exc.name and target.startswith(exc.name):
            raise Exit(SETUP, f"--agent: no module named {exc.name!r}") from exc
        raise Exit(SETUP, f"--agent: {where} failed to import: {_brief(exc)}") from exc


def _file_loader(target: str) -> tuple[Path, Callable[[], Any]]:
    """The file's resolved path and what runs it; a missing or unloadable file is an Exit here."""
    path = Path(target).expanduser().resolve()
    if not path.is_file():
        raise Exit(SETUP, f"--agent: no such file {path}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise Exit(SETUP, f"--agent: cannot load {path}")
    loader, module = spec.loader, importlib.util.module_from_spec(spec)

    def load() -> Any:
        sys.path.insert(0, str(path.parent))
        loader.exec_module(module)
        return module

    return path, load


def _brief(exc: BaseException) -> str:
    """`ZeroDivisionError: division by zero (team.py, line 3)`: the user's own frame, not crow's."""
    where = ""
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        where = f" ({Path(last.filename).name}, line {last.lineno})"
    if isinstance(exc, SyntaxError) and exc.lineno:
        where = f" ({Path(exc.filename or '?').name}, line {exc.lineno})"
    text = str(exc.msg if isinstance(exc, SyntaxError) else exc)
    return f"{type(exc).__name__}: {text}{where}" if text else f"{type(exc).__name__}{where}"
