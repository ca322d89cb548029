"""`--agent MODULE:ATTR` or `path/to/file.py:ATTR`: the user's code, loaded with one clear line on failure."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import traceback
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
    from crow_acp.agent import AcpAgent
    from crow_acp.multi import MultiAgent

    if not isinstance(value, (AcpAgent, MultiAgent)) and callable(value):
        try:
            value = value()  # a zero-argument factory
        except Exception as exc:  # boundary with the user's build(): one line instead of a traceback
            raise Exit(SETUP, f"--agent {spec}: {attr}() raised {_brief(exc)}") from exc
    if not isinstance(value, (AcpAgent, MultiAgent)):
        raise Exit(SETUP, f"--agent {spec} is not an AcpAgent or MultiAgent, nor a factory of one "
                          f"(got {type(value).__name__})")
    return value


def _import(target: str) -> Any:
    if target.endswith(".py"):
        path = Path(target).expanduser().resolve()
        if not path.is_file():
            raise Exit(SETUP, f"--agent: no such file {path}")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise Exit(SETUP, f"--agent: cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(path.parent))
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # boundary with the user's module: one line instead of a traceback
            raise Exit(SETUP, f"--agent: {path} failed to import: {_brief(exc)}") from exc
        return module
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        if exc.name and target.startswith(exc.name):
            raise Exit(SETUP, f"--agent: no module named {exc.name!r}") from exc
        raise Exit(SETUP, f"--agent: {target} failed to import: {_brief(exc)}") from exc
    except Exception as exc:  # boundary with the user's module, as above
        raise Exit(SETUP, f"--agent: {target} failed to import: {_brief(exc)}") from exc


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
