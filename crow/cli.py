"""The `crow` command: `crow acp` serves an agent to an editor, `crow run` drives one from a terminal.

Nothing here imports rich, the agent or the SDK at module level: `crow acp`'s cold start is measured.
A user's mistake ends as one `crow: ...` line on stderr with a status from crow/exits.py.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from crow.exits import HELP as EXIT_HELP
from crow.exits import INTERRUPTED, USAGE, Exit, die_by_sigpipe
from crow.startup import env_warnings, load, version

ENVIRONMENT_HELP = """\
environment:
  OPENAI_API_KEY     the model key (a profile may read another variable: api_key_env)
  OPENAI_BASE_URL    endpoint for profiles without their own base_url
  CROW_MODEL         a profile name from [models], or a raw model id
  CROW_API           the model wire for profiles without `api`: chat, responses or anthropic
  ANTHROPIC_API_KEY  the anthropic wire's key (or ANTHROPIC_AUTH_TOKEN); ANTHROPIC_BASE_URL its endpoint
  CROW_HOME          crow's directory (default ~/.crow)
  CROW_DATABASE_URL  postgresql://... keeps sessions in PostgreSQL (over [store] url); unset: SQLite
  CROW_SERVE_TOKEN   the token `crow serve` requires of clients (or --token-file)
  CROW_HOST_ID       this host's name in session leases, for hosts that share a hostname (containers)
  CROW_LOG_LEVEL     DEBUG, INFO (default), WARNING or ERROR
  CROW_LOG_FORMAT    text (default) or json: one JSON object per log line (or --log-format)
  OTEL_EXPORTER_OTLP_ENDPOINT  an OTLP/HTTP collector: every turn is a trace there (OTEL_SDK_DISABLED=true
                     or OTEL_TRACES_EXPORTER=none: off; the SDK's other OTEL_* variables apply)
  also read: SHELL (else COMSPEC), named in the system prompt; TIKTOKEN_CACHE_DIR (else
  DATA_GYM_CACHE_DIR), where tiktoken's encodings are cached

paths (under $CROW_HOME):
  config.toml      configuration          sessions.db   stored sessions
  logs/crow.log    logs                   skills/       skills (also ~/.agents/skills, <cwd>/.crow/skills)
  prompts/         system prompt template

"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="crow",
        description="A small ACP agent server for Zed and other editors.",
        epilog=ENVIRONMENT_HELP + EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_Version)
    _add_resume_flags(parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    home = argparse.ArgumentParser(add_help=False)
    home.add_argument("--home", help="crow home directory (overrides CROW_HOME)")
    agent = argparse.ArgumentParser(add_help=False, parents=[home])
    agent.add_argument("--agent", help="serve a Python agent: MODULE:ATTR or path/to/file.py:ATTR")
    agent.add_argument("--model", help="model profile or model id (overrides CROW_MODEL and config)")
    agent.add_argument(
        "--log-format", choices=["text", "json"], help="log lines as text or one JSON object each (CROW_LOG_FORMAT)"
    )
    acp = commands.add_parser("acp", parents=[agent], help="serve the agent over ACP on stdio (what Zed runs)")
    acp.add_argument("--log-file-only", action="store_true", help=argparse.SUPPRESS)  # logs to crow.log only
    run = commands.add_parser(
        "run",
        parents=[agent],
        help="run one prompt from the terminal",
        epilog=EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("prompt", nargs="?", help="the prompt text ('-' reads it from stdin; none with -c: /continue)")
    run.add_argument("--yes", action="store_true", help="allow every tool call without asking")
    run.add_argument("--cwd", default=".", help="working directory of the session (default: the current one)")
    chosen = run.add_mutually_exclusive_group()
    chosen.add_argument("--session", metavar="ID", help="continue a stored session: its id, or a unique prefix (6+)")
    chosen.add_argument(
        "-c", "--continue", dest="continue_last", action="store_true", help="continue this directory's latest session"
    )
    from crow.permission_flags import add_permission_flags

    add_permission_flags(run)
    run.add_argument("--format", choices=["text", "json"], default="text", help="json: one JSON object per event")
    run.add_argument(
        "--raw", action="store_true", help="in a pipe or file, write the answer's control characters as sent"
    )
    run.add_argument("-v", "--verbose", action="store_true", help="also show logs and MCP servers' stderr")
    chat = commands.add_parser("chat", parents=[agent], help="talk with the agent on this terminal (also: crow alone)")
    chat.add_argument("--cwd", default=".", help="working directory of the session (default: the current one)")
    start = chat.add_mutually_exclusive_group()
    start.add_argument("--session", metavar="ID", help="talk in a stored session: its id, or a unique prefix (6+)")
    start.add_argument(
        "-c", "--continue", dest="continue_last", action="store_true", help="continue this directory's latest session"
    )
    start.add_argument(
        "--resume", dest="resume_chat", nargs="?", const="", metavar="ID", help="like --session; no id: pick one"
    )
    add_permission_flags(chat)
    chat.add_argument("-v", "--verbose", action="store_true", help="also show logs and MCP servers' stderr")
    sessions = commands.add_parser("sessions", parents=[home], help="list, show, delete or share stored sessions")
    sessions.add_argument("action", nargs="?", choices=["list", "show", "delete", "share", "unshare"], default="list")
    sessions.add_argument(
        "id", nargs="?", help="a session id or a unique prefix of 6+ characters (show, delete, share)"
    )
    sessions.add_argument("user", nargs="?", help="share, unshare: the `crow serve --users` user")
    sessions.add_argument("--read-only", action="store_true", help="share: load and fork only, no prompts")
    listed = sessions.add_mutually_exclusive_group()
    listed.add_argument("--json", action="store_true", help="list: one JSON array of the sessions")
    listed.add_argument("-q", "--quiet", action="store_true", help="list: the ids only, one a line")
    check = commands.add_parser("check", parents=[agent], help="report the resolved configuration; exit 1 if broken")
    check.add_argument("--cwd", default=".", help="the directory whose project skills are checked")
    from crow.serve_cmd import add_parser

    add_parser(commands, agent)
    from crow import setup_cmd

    setup_cmd.add_parser(commands, home)
    return parser


def _add_resume_flags(parser: argparse.ArgumentParser) -> None:
    """`crow --continue` and `crow --resume [ID]`: the interactive session, continued (crow/run/resume.py)."""
    parser.add_argument(
        "-c",
        "--continue",
        dest="continue_chat",
        action="store_true",
        help="continue this directory's latest session in the conversation (`crow run -c` for one prompt)",
    )
    parser.add_argument(
        "--resume",
        dest="resume_chat",
        nargs="?",
        const="",
        metavar="ID",
        help="resume a session by id or a 6+ character prefix; no id: pick from this directory's",
    )


class _Version(argparse.Action):
    """--version, looked up only when asked for: reading the installed metadata costs every start-up."""

    def __init__(self, option_strings: list[str], dest: str, **_: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show crow's version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        sys.stdout.write(f"crow {version()}\n")
        parser.exit()


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if not argv and sys.stdin.isatty() and sys.stdout.isatty():
        argv = ["chat"]  # `crow` alone on a terminal talks; in a pipe or script it still asks for a command
    try:
        parser = _parser()
        args = parser.parse_args(argv)
        if args.command is None and not (args.continue_chat or args.resume_chat is not None):
            parser.error("the following arguments are required: COMMAND")
        if args.command is None:  # `crow -c` and `crow --resume [ID]` are `crow chat -c` and `crow chat --resume`
            args = parser.parse_args(["chat", *argv])
        elif args.continue_chat or args.resume_chat is not None:
            raise Exit(USAGE, f"--continue and --resume come after the command there: crow {args.command} --continue")
        if args.home:
            os.environ["CROW_HOME"] = str(Path(args.home).expanduser().resolve())
        sys.exit(_dispatch(args))
    except Exit as stop:
        from crow_acp.util.secrets import hide_url_password

        sys.stderr.write(f"crow: {hide_url_password(stop.message)}\n")  # a database URL's password never shows
        sys.exit(stop.status)
    except KeyboardInterrupt:
        sys.exit(INTERRUPTED)
    except BrokenPipeError:  # the reader went away (`crow sessions | head -1`): end as `cat` does, by SIGPIPE
        die_by_sigpipe()


def _dispatch(args: argparse.Namespace) -> int:
    if args.command in ("acp", "run", "chat", "serve"):  # before anything imports the SDK (crow_acp/acp/rpc/schema.py)
        from crow.private_memory import make_non_dumpable
        from crow_acp.acp.rpc.schema import import_schema

        make_non_dumpable()  # before any key is read: commands of the same user cannot read crow's memory

        import_schema()
    if args.command in ("acp", "run", "chat", "serve"):
        from crow_acp.server import startup_gc

        startup_gc.pause()  # resumed once the agent is built
    if args.command == "acp":
        serve_agent(args.agent, args.model, log_to_stderr=not args.log_file_only, log_format=args.log_format)
        return 0
    if args.command == "run":
        return run_terminal(args)
    if args.command == "chat":
        from crow.chat import chat_command

        return chat_command(args, resolve_cwd(args.cwd))
    if args.command == "serve":
        from crow.serve_cmd import serve_command

        return serve_command(args)
    if args.command == "setup":
        from crow.setup_cmd import setup_command

        return setup_command(args)
    if args.command == "sessions":
        from crow.sessions import sessions_command

        listing = "json" if args.json else "ids" if args.quiet else "table"
        return sessions_command(args.action, args.id, listing, user=args.user, read_only=args.read_only)
    from crow.check import check_command

    return check_command(args.agent, args.model, resolve_cwd(args.cwd))


def serve_agent(
    spec: str | None, model: str | None, *, log_to_stderr: bool = True, log_format: str | None = None
) -> None:
    from crow.agent_loader import load_agent
    from crow_acp.server.stdin import watchable
    from crow_acp.server.stdio import configure_logging, protect_stdout, serve
    from crow_acp.telemetry.setup import log_format as chosen_format
    from crow_acp.telemetry.setup import traced

    if not watchable(1):
        raise Exit(
            USAGE,
            "crow acp writes ACP to a pipe, a socket or a terminal, not to a file or a closed stdout; "
            "pipe its output instead (crow acp < requests.jsonl | tee answers.jsonl)",
        )

    config = load(model)  # a mistake in config.toml stops crow here, before it serves anything
    if spec is None:  # the default agent is built once initialize is answered (crow_acp/server/lazy_agent.py)
        from crow_acp.server.lazy_agent import LazyAgent

        configure_logging(config.log_dir, stderr=log_to_stderr, fmt=chosen_format(log_format, config))
        with traced(config):
            serve(LazyAgent(lambda: signing_in(load_agent(None, config))), protocol_fd=protect_stdout())
        return
    configure_logging(config.log_dir, stderr=log_to_stderr, fmt=chosen_format(log_format, config))
    protocol_fd = protect_stdout()  # before the user's module runs: its prints must not reach the wire
    with traced(config):
        agent = load_agent(spec, config)
        from crow_acp.server import startup_gc

        startup_gc.resume()
        serve(agent, protocol_fd=protocol_fd)


def signing_in(agent: Any) -> Any:
    """The default agent, whose sessions answer auth_required (-32000) until a key is usable: the editor then
    offers its Authenticate button, which runs `crow setup` (crow_acp/acp/sessions/auth_gate.py)."""
    agent.require_sign_in()
    return agent


def resolve_cwd(raw: str) -> str:
    path = Path(raw).expanduser().resolve()
    if not path.is_dir():
        raise Exit(USAGE, f"--cwd {raw}: {'not a directory' if path.exists() else 'no such directory'}")
    return str(path)


def run_terminal(args: argparse.Namespace) -> int:
    if args.prompt is None and not (args.continue_last or args.session):
        raise Exit(USAGE, "the prompt is missing: give it as an argument, '-' to read it from stdin, or -c alone")
    prompt = "/continue" if args.prompt is None else sys.stdin.read() if args.prompt == "-" else args.prompt
    if not prompt.strip():
        raise Exit(USAGE, "the prompt is empty: give it as an argument, or '-' to read it from stdin")
    cwd = resolve_cwd(args.cwd)
    from crow.permission_flags import with_rules
    from crow.run import run_prompt
    from crow.run.options import RunOptions
    from crow.startup import terminal_setup

    config, flags = terminal_setup(args)
    warnings = env_warnings() + config.warnings()
    if flags.mode == "full_access":  # no question: the flag is spelled out for this one run, like --yes
        warnings.append("--mode full_access: every tool runs without asking, commands outside the sandbox")
    options = RunOptions(
        prompt=prompt,
        cwd=cwd,
        session=args.session,
        continue_last=args.continue_last,
        mode=flags.mode,
        config=with_rules(config, flags),
        approve=args.yes,
        format=args.format,
        raw=args.raw,
        verbose=args.verbose,
        agent=args.agent,
        log_dir=config.log_dir,
        log_format=args.log_format,
        warnings=warnings,
    )
    return run_prompt(options)
