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
    """Builds a new agent for each connection: the default one, or the user's zero-argument factory."""
    if spec is None:
        from crow.presets import default_agent

        return lambda: default_agent(config)
    from crow.agent_loader import _import
    from crow_acp.agent import AcpAgent

    target, _, attr = spec.rpartition(":")
    value = getattr(_import(target), attr, None) if target and attr else None
    if isinstance(value, AcpAgent) or not callable(value):
        raise Exit(SETUP, f"serve --agent wants MODULE:FACTORY, a zero-argument factory of an AcpAgent "
                          f"(each connection gets its own agent), got {spec!r}")
    return value


def _with_store(agent: Any, store: Any) -> Any:
    from crow_acp.agent import AcpAgent

    if not isinstance(agent, AcpAgent):
        raise TypeError(f"the --agent factory built a {type(agent).__name__}, not an AcpAgent")
    agent.use_store(store)
    return agent
