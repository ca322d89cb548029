"""`crow setup`: store the model credentials (crow/setup/). On a terminal it asks; with --provider it takes
flags (the key from --key-env VAR or stdin), for scripts. Exit 0 stored, 1 the provider refused, 2 a
mistake on the command line."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from crow.exits import FAILED, USAGE, Exit


def add_parser(commands: Any, home: argparse.ArgumentParser) -> None:
    setup = commands.add_parser("setup", parents=[home], help="choose a provider, a key and a model; store them")
    setup.add_argument("--provider", choices=["openai", "anthropic", "openrouter", "custom"], help="no questions")
    setup.add_argument("--base-url", help="the provider's base URL (needed for custom)")
    setup.add_argument("--model", help="the default model id (default: crow's pick among those the provider lists)")
    setup.add_argument("--key-env", metavar="VAR", help="read the key from this variable (default: stdin)")


def setup_command(args: argparse.Namespace) -> int:
    from crow.setup.flow import interactive, say
    from crow_acp.config import crow_home
    from crow_acp.config.credentials import save_credentials

    if args.provider is None:
        if not sys.stdin.isatty():
            raise Exit(USAGE, "crow setup asks on a terminal; in a script give --provider (and --model, --key-env)")
        say("crow setup: the model crow talks to. Nothing is written until the key is checked.")
        credentials = interactive()
    else:
        credentials = _from_flags(args)
    path = save_credentials(crow_home(), credentials)
    say(f"Stored {credentials.provider} ({credentials.base_url}), model {credentials.model}, in {path} (mode 600).")
    return 0


def _from_flags(args: argparse.Namespace) -> Any:
    from crow.setup.probe import check_key, list_models
    from crow.setup.providers import PROVIDERS, default_model
    from crow_acp.config.credentials import StoredCredentials

    provider = PROVIDERS[args.provider]
    base_url = args.base_url or provider.base_url
    if not base_url or not base_url.startswith(("http://", "https://")):
        raise Exit(USAGE, "--base-url: give the server's URL, starting with http:// or https://")
    key = _flag_key(args.key_env)
    if key is None and provider.needs_key:
        raise Exit(USAGE, f"{provider.label} needs a key: pipe it on stdin, or name its variable with --key-env")
    model = args.model
    if model is None:
        models, problem = list_models(provider.api, base_url, key)
        if problem:
            raise Exit(FAILED, f"the provider refused the model list request: {problem}")
        model = default_model(provider, models)
        if model is None:
            raise Exit(USAGE, "--model: the provider listed no models; name one")
    if problem := check_key(provider.api, base_url, key, model):
        raise Exit(FAILED, f"the provider refused the check request: {problem}")
    return StoredCredentials(provider.id, provider.api, base_url, model, key)


def _flag_key(variable: str | None) -> str | None:
    if variable is not None:
        if not os.environ.get(variable):
            raise Exit(USAGE, f"--key-env: {variable} is not set")
        return os.environ[variable].strip()
    if sys.stdin.isatty():
        return None
    return sys.stdin.read(64 * 1024).strip() or None
