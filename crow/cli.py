"""The `crow` command: `crow acp` serves an agent to an editor, `crow run` drives one from a terminal."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="crow", description="A small ACP agent server for Zed and other editors.")
    commands = parser.add_subparsers(dest="command", required=True)
    agent_options = argparse.ArgumentParser(add_help=False)
    agent_options.add_argument("--agent", help="serve a Python agent: MODULE:ATTR or path/to/file.py:ATTR")
    agent_options.add_argument("--model", help="model profile or model id (overrides CROW_MODEL and config)")
    agent_options.add_argument("--home", help="crow home directory (overrides CROW_HOME)")
    commands.add_parser("acp", parents=[agent_options], help="serve the agent over ACP on stdio (what Zed runs)")
    run = commands.add_parser("run", parents=[agent_options], help="run one prompt from the terminal")
    run.add_argument("prompt", help="the prompt text ('-' reads it from stdin)")
    run.add_argument("--yes", action="store_true", help="allow every tool call without asking")
    run.add_argument("--cwd", default=os.getcwd(), help="working directory of the session")
    run.add_argument("--session", help="continue a stored session by id")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    if args.home:
        os.environ["CROW_HOME"] = str(Path(args.home).expanduser().resolve())
    if args.command == "acp":
        serve_agent(args.agent, args.model)
    else:
        sys.exit(run_terminal(args))


def serve_agent(spec: str | None, model: str | None) -> None:
    from crow_acp.config import load_config
    from crow_acp.errors import ConfigError
    from crow_acp.serve import configure_logging, serve

    try:
        config = load_config(model=model)
    except ConfigError as exc:
        sys.stderr.write(f"crow: {exc}\n")
        sys.exit(3)
    configure_logging(config.log_dir)
    serve(load_agent(spec, config))


def load_agent(spec: str | None, config: Any) -> Any:
    """The default agent, or MODULE:ATTR / file.py:ATTR (an agent or a zero-argument factory)."""
    if spec is None:
        from crow.presets import default_agent

        return default_agent(config)
    target, _, attr = spec.rpartition(":")
    if not target or not attr:
        sys.exit(f"crow: --agent wants MODULE:ATTR or path/to/file.py:ATTR, got {spec!r}")
    module = _import(target)
    value = getattr(module, attr, None)
    if value is None:
        sys.exit(f"crow: {target} has no attribute {attr!r}")
    from crow_acp.agent import AcpAgent
    from crow_acp.multi import MultiAgent

    if not isinstance(value, (AcpAgent, MultiAgent)) and callable(value):
        value = value()  # a zero-argument factory
    if not isinstance(value, (AcpAgent, MultiAgent)):
        sys.exit(f"crow: {spec} is not an AcpAgent or MultiAgent, nor a factory of one (got {type(value).__name__})")
    return value


def _import(target: str) -> Any:
    if target.endswith(".py"):
        path = Path(target).expanduser().resolve()
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None or not path.exists():
            sys.exit(f"crow: cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(path.parent))
        spec.loader.exec_module(module)
        return module
    return importlib.import_module(target)


def run_terminal(args: argparse.Namespace) -> int:
    from crow.terminal import run_prompt

    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    agent_args = [flag for name in ("agent", "model") if (value := getattr(args, name)) for flag in (f"--{name}", value)]
    try:
        return asyncio.run(run_prompt(prompt, agent_args, approve=args.yes, cwd=args.cwd, session=args.session))
    except KeyboardInterrupt:
        return 130
