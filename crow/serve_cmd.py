"""`crow serve`: the agent over Streamable HTTP and WebSocket for many clients (see crow_acp/web)."""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
from dataclasses import dataclass
from typing import Any

from crow.exits import SETUP, Exit


def add_parser(commands: Any, agent_options: argparse.ArgumentParser) -> None:
    serve = commands.add_parser(
        "serve", parents=[agent_options], help="serve the agent over HTTP and WebSocket to many clients (teams)"
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8765, help="port to listen on (default 8765)")
    serve.add_argument(
        "--token-file",
        metavar="PATH",
        help="file holding the bearer token clients must send (else CROW_SERVE_TOKEN, "
        "else crow generates one into $CROW_HOME/serve-PORT.token)",
    )
    serve.add_argument(
        "--token",
        help="the bearer token itself; kept for old scripts, but every local user sees it in ps: "
        "prefer CROW_SERVE_TOKEN or --token-file",
    )
    serve.add_argument(
        "--no-token", action="store_true", help="serve without a token (loopback only; any local user can connect)"
    )
    serve.add_argument(
        "--allowed-host", action="append", default=[], metavar="NAME", help="a Host name clients use (repeatable)"
    )
    serve.add_argument(
        "--allowed-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin allowed in (repeatable)",
    )
    serve.add_argument(
        "--allow-client-command",
        action="append",
        default=[],
        metavar="COMMAND",
        help="a stdio MCP server command clients may start (repeatable)",
    )
    serve.add_argument(
        "--allow-client-commands", action="store_true", help="clients may start any stdio MCP server command"
    )
    serve.add_argument(
        "--allow-client-url",
        action="append",
        default=[],
        metavar="HOST|HOST:PORT|URL",
        help="a loopback, private or link-local MCP server clients may name (repeatable; others must be public)",
    )
    serve.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="DIR",
        help="a directory clients' cwd and additionalDirectories must lie in (repeatable; default: the current one)",
    )
    serve.add_argument(
        "--max-mode",
        choices=["ask", "plan", "accept_edits", "auto", "full_access"],
        default="auto",
        help="the most permissive mode a session may have (default auto: no command runs outside the sandbox)",
    )
    serve.add_argument(
        "--idle-timeout",
        type=float,
        default=300.0,
        help="seconds before an idle HTTP connection is closed (default 300)",
    )
    serve.add_argument(
        "--header-timeout", type=float, default=10.0, help="seconds a client has to send request headers (default 10)"
    )
    serve.add_argument("--max-connections", type=int, default=256, help="ACP connections at once (default 256)")
    serve.add_argument("--max-requests", type=int, default=64, help="unanswered requests per connection (default 64)")
    serve.add_argument(
        "--max-body", type=int, default=50 * 1024 * 1024, help="bytes in one request or message (default 50 MiB)"
    )
    serve.add_argument("--grace", type=float, default=30.0, help="seconds running turns get after SIGTERM (default 30)")
    from crow.serve_users import add_arguments

    add_arguments(serve)  # --users, and `crow serve user add|list|remove`


def serve_command(args: argparse.Namespace) -> int:
    if args.serve_action == "user":
        from crow.serve_users import user_command

        return user_command(args)
    from crow.startup import load
    from crow_acp.mcp.address_guard import ClientUrls
    from crow_acp.server.stdio import configure_logging
    from crow_acp.store import StoreError, open_store
    from crow_acp.web.app import Limits
    from crow_acp.web.bounds import ClientBounds, ClientRules
    from crow_acp.web.client_servers import ClientCommands
    from crow_acp.web.guard import Gate
    from crow_acp.web.listen import CannotListen
    from crow_acp.web.run import ServeOptions, TokenRequired, check_token, serve

    limits = Limits(
        max(args.max_connections, 1),
        max(args.max_requests, 1),
        max(args.max_body, 1024),
        max(args.idle_timeout, 1.0),
        max(args.header_timeout, 1.0),
    )
    commands = ClientCommands(args.allow_client_commands, frozenset(args.allow_client_command))
    urls = ClientUrls(tuple(args.allow_client_url))
    rules = ClientRules(commands, ClientBounds.of(_roots(args.root), args.max_mode), urls)
    gate = Gate.build(args.host, args.allowed_host, args.allowed_origin)
    config = load(args.model)
    _cap_mode(config, args.max_mode)
    token, token_file = _token(args, config.home)
    _protected(token)
    from crow.serve_users import load_users, metrics_token

    users = load_users(args.users, rules.bounds) if args.users else None
    announce = functools.partial(_announce, args.host, token_file, token)
    grace = max(args.grace, 0.0)
    scraper = metrics_token(args.metrics_token_file)
    options = ServeOptions(args.host, args.port, token, grace, limits, gate, rules, announce, scraper, users)
    try:
        check_token(options)  # --no-token beyond loopback: the rule crow_acp.web.run.serve holds too
    except TokenRequired as exc:
        raise Exit(SETUP, str(exc)) from exc
    if options.token is None and users is None:
        _warn(
            "WARNING: crow serve runs WITHOUT A TOKEN (--no-token): every process and user on this machine can "
            "connect and run tools as you. Use it only on a machine that is yours alone."
        )
    from crow.serve_agents import agent_factory, with_store

    make_agent = agent_factory(args.agent, config)
    try:
        store = open_store(config)
    except StoreError as exc:
        raise Exit(SETUP, str(exc)) from exc
    from crow_acp.telemetry.setup import log_format, traced

    configure_logging(config.log_dir, fmt=log_format(args.log_format, config))
    try:
        with traced(config):
            from crow_acp.server import startup_gc

            if args.agent is None:  # an --agent was built once already, as agent_factory checked it
                make_agent()  # so the first connection's imports are made now, and frozen with the rest
            startup_gc.resume()  # after the store and the tracer too: full collections skip all of it
            asyncio.run(serve(lambda: with_store(make_agent(), store), store, options))
    except (StoreError, CannotListen, OSError) as exc:  # the database is unreachable, or the port is taken
        raise Exit(SETUP, str(exc)) from exc
    finally:
        if token_file is not None and token_file.path is not None and token is not None:
            from crow_acp.web.token import remove_token_file

            remove_token_file(token_file.path, token)
    return 0


def _protected(token: str | None) -> str | None:
    """The token, registered as a secret: redacted from the wire, the store, the logs and model requests."""
    from crow_acp.util.secrets import protect_value

    if token:
        protect_value(token)
    return token


def _roots(given: list[str]) -> list[str]:
    for root in given:
        if not os.path.isdir(os.path.expanduser(root)):
            raise Exit(SETUP, f"--root {root}: not a directory")
    return given or [os.getcwd()]


def _cap_mode(config: Any, cap: str) -> None:
    """[permissions] max_mode from --max-mode; a config default_mode above it starts at the cap instead."""
    from crow_acp.config.tables import MODE_ORDER

    permissions = config.permissions
    if MODE_ORDER.index(permissions.max_mode) < MODE_ORDER.index(cap):
        cap = permissions.max_mode  # the config's own cap is lower: it holds
    if MODE_ORDER.index(permissions.default_mode) > MODE_ORDER.index(cap):
        _warn(
            f"crow serve: [permissions] default_mode {permissions.default_mode} is above --max-mode {cap}: "
            f"sessions start in {cap}"
        )
        permissions.default_mode = cap
    permissions.max_mode = cap


@dataclass
class _TokenFile:
    """Where a generated token goes once the port is bound (never before: a clash would replace another's),
    and where it went, to be removed at exit (a token file outliving its server would name a dead token)."""

    home: Any
    path: Any = None


def _announce(host: str, token_file: _TokenFile | None, token: str | None, port: int) -> None:
    from crow_acp.web.run import client_urls

    if token_file is not None and token is not None:
        from crow_acp.web.token import write_token_file

        path = token_file.path = write_token_file(token_file.home, port, token)
        _warn(
            f"crow serve: clients must send 'Authorization: Bearer <token>'; the token is in {path} "
            "(readable by you only)"
        )
    _warn(f"crow serve: clients connect to {client_urls(host, port)}")


def _token(args: argparse.Namespace, home: Any) -> tuple[str | None, _TokenFile | None]:
    """The operator's token (file, then environment), none with --no-token, else a generated one (with
    where it will be written)."""
    from crow_acp.web.token import TokenError, new_token, read_token_file

    if args.users:
        if args.token or args.token_file or args.no_token:
            raise Exit(SETUP, "--users and --token, --token-file or --no-token contradict each other")
        return None, None  # each user has their own token (CROW_SERVE_TOKEN is not one of them)
    if args.no_token:
        if args.token or args.token_file or os.environ.get("CROW_SERVE_TOKEN"):
            raise Exit(
                SETUP, "--no-token and a token (--token, --token-file or CROW_SERVE_TOKEN) contradict each other"
            )
        return None, None
    if args.token:
        _warn(
            "crow serve: --token puts the token on the command line, where every local user can read it (ps); "
            "use CROW_SERVE_TOKEN or --token-file"
        )
        if not (token := args.token.strip()):
            raise Exit(SETUP, "--token is empty: give a token, or --no-token to serve without one (loopback only)")
        return token, None
    try:
        if args.token_file:
            return read_token_file(args.token_file), None
    except TokenError as exc:
        raise Exit(SETUP, str(exc)) from exc
    if token := os.environ.get("CROW_SERVE_TOKEN", "").strip():
        return token, None
    return new_token(), _TokenFile(home)


def _warn(text: str) -> None:
    import sys

    sys.stderr.write(text + "\n")
    sys.stderr.flush()
