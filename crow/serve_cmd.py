"""`crow serve`: the agent over Streamable HTTP and WebSocket for many clients (see crow_acp/web)."""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Callable
from typing import Any

from crow.exits import SETUP, Exit


def add_parser(commands: Any, agent_options: argparse.ArgumentParser) -> None:
    serve = commands.add_parser(
        "serve", parents=[agent_options], help="serve the agent over HTTP and WebSocket to many clients (teams)"
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (beyond loopback a token is required)")
    serve.add_argument("--port", type=int, default=8765, help="port to listen on (default 8765)")
    serve.add_argument("--token", default=os.environ.get("CROW_SERVE_TOKEN"), help="bearer token clients must send (or CROW_SERVE_TOKEN)")
    serve.add_argument("--max-connections", type=int, default=256, help="ACP connections at once (default 256)")
    serve.add_argument("--max-requests", type=int, default=64, help="unanswered requests per connection (default 64)")
    serve.add_argument("--max-body", type=int, default=50 * 1024 * 1024, help="bytes in one request or message (default 50 MiB)")
    serve.add_argument("--grace", type=float, default=30.0, help="seconds running turns get after SIGTERM (default 30)")


def serve_command(args: argparse.Namespace) -> int:
    from crow.cli import load
    from crow_acp.serve import configure_logging
    from crow_acp.store import StoreError, open_store
    from crow_acp.web.app import Limits
    from crow_acp.web.run import ServeOptions, TokenRequired, check_token, serve

    limits = Limits(max(args.max_connections, 1), max(args.max_requests, 1), max(args.max_body, 1024))
    options = ServeOptions(args.host, args.port, args.token or None, max(args.grace, 0.0), limits)
    try:
        check_token(options)
    except TokenRequired as exc:
        raise Exit(SETUP, str(exc)) from exc
    config = load(args.model)
    make_agent = agent_factory(args.agent, config)
    try:
        store = open_store(config)
    except StoreError as exc:
        raise Exit(SETUP, str(exc)) from exc
    configure_logging(config.log_dir)
    try:
        asyncio.run(serve(lambda: _with_store(make_agent(), store), store, options))
    except (StoreError, OSError) as exc:  # the database is unreachable, or the port is taken
        raise Exit(SETUP, str(exc)) from exc
    return 0


def agent_factory(spec: str | None, config: Any) -> Callable[[], Any]:
    """Builds a new agent for each connection (an agent holds its connection): the default one, or what
    `--agent` names, as `crow acp --agent` takes it. A zero-argument factory is called once per connection;
    an agent or MultiAgent instance comes from running its module again, so no two connections share one."""
    if spec is None:
        from crow.presets import default_agent

        return lambda: default_agent(config)
    from crow.agent_loader import load_agent
    from crow_acp.agent import AcpAgent
    from crow_acp.multi import MultiAgent

    load_agent(spec, config)  # a mistake in the spec or the user's module stops crow here, in one line
    target, _, attr = spec.rpartition(":")
    value = getattr(_module(target, fresh=False), attr)
    if not isinstance(value, (AcpAgent, MultiAgent)):
        return lambda: _checked(value(), spec)
    return lambda: _checked(getattr(_module(target, fresh=True), attr, None), spec)


def _module(target: str, *, fresh: bool) -> Any:
    """The user's module as `crow acp` imports it, or run anew (its folder is on sys.path already)."""
    import importlib
    import importlib.util
    from pathlib import Path

    from crow.agent_loader import _import

    if not fresh:
        return _import(target)
    found = importlib.util.spec_from_file_location(Path(target).stem, Path(target).expanduser().resolve()) \
        if target.endswith(".py") else importlib.util.find_spec(target)
    if found is None or found.loader is None:
        raise RuntimeError(f"--agent: cannot load {target} again")
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


def _checked(agent: Any, spec: str) -> Any:
    from crow_acp.agent import AcpAgent
    from crow_acp.multi import MultiAgent

    if not isinstance(agent, (AcpAgent, MultiAgent)):
        raise TypeError(f"--agent {spec} built a {type(agent).__name__}, not an AcpAgent or MultiAgent")
    return agent


def _with_store(agent: Any, store: Any) -> Any:
    """Every agent of a connection keeps its sessions in the server's one store (a graph's members too)."""
    from crow_acp.agent import AcpAgent

    for member in [agent] if isinstance(agent, AcpAgent) else agent.members:
        member.use_store(store)
    return agent
