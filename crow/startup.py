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


def terminal_setup(args: Any) -> tuple[Any, Any]:
    """`crow run`'s and `crow chat`'s configuration, checked as one: loaded (--model), keys protected, a model
    key present for crow's own agent, and the permission flags (crow/permission_flags.py). (config, flags)."""
    from crow.exits import USAGE
    from crow.permission_flags import permission_flags
    from crow_acp.errors import ConfigError
    from crow_acp.util.secrets import protect

    config = load(args.model)
    protect(config)  # before the agent starts: its logs, the wire and the output caught from its servers lose the keys
    flags = permission_flags(args)  # a mistake on the command line is said first (exit 2), whatever else is missing
    if args.agent is not None and (flags.allow or flags.deny):
        raise Exit(USAGE, "--allow and --deny set crow's own agent's rules, not an --agent's")
    if args.agent is None:  # a custom agent may bring its own models and keys
        try:
            config.api_key()
        except ConfigError as exc:
            raise Exit(SETUP, str(exc)) from exc
    return config, flags


def env_warnings() -> list[str]:
    from crow_acp.server.stdio import log_level

    problem = log_level()[1]
    return [problem] if problem else []


def store_location(config: Any) -> str:
    """The session store in use, as a user may see it: SQLite's path, or the database URL without its password."""
    from crow_acp.store import store_url
    from crow_acp.util.secrets import hide_url_password

    url = store_url(config)
    return f"{config.db_path} (SQLite)" if url is None else hide_url_password(url)


async def store_problem(config: Any) -> str | None:
    """Why the session store does not answer, on one line; None when it does."""
    from crow_acp.store import StoreError, open_store

    try:
        store = open_store(config)
    except StoreError as exc:
        return " ".join(str(exc).split())
    try:
        await store.ping()
    except StoreError as exc:
        return " ".join(str(exc).split())  # psycopg's message spans lines
    finally:
        await store.close()
    return None


async def store_state(config: Any) -> Any:
    """The store's schema version and live leases (crow_acp.store.StoreState), or why they cannot be read."""
    from crow_acp.store import open_store

    try:
        store = open_store(config)
        try:
            return await store.state()
        finally:
            await store.close()
    except Exception as exc:  # the database's own errors (sqlite3, psycopg) too: a report line, not a traceback
        return " ".join(str(exc).split())
