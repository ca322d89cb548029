"""What every crow command does first: load the configuration (a mistake exits 3 with one line per
mistake), say which version this is, and warn about the environment."""

from __future__ import annotations

from typing import Any

from crow.exits import SETUP, Exit


def version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("crow-agent")
    except PackageNotFoundError:
        return "unknown"


def load(model: str | None = None) -> Any:
    """The configuration, or exit 3 with the error's one line per mistake."""
    from crow_acp.config import load_config
    from crow_acp.errors import ConfigError

    try:
        return load_config(model=model)
    except ConfigError as exc:
        raise Exit(SETUP, str(exc)) from exc


def env_warnings() -> list[str]:
    from crow_acp.server.stdio import log_level

    problem = log_level()[1]
    return [problem] if problem else []
