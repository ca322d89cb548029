"""`crow setup` on a terminal: choose a provider, paste the key (hidden), pick the model from the live
list (or type one), and the key checked with one tiny request; on failure the provider's message and the
questions again. Nothing is written before the check passes, so Ctrl-C leaves nothing behind."""

from __future__ import annotations

import getpass
import sys
from collections.abc import Callable

from crow.setup.probe import check_key, list_models
from crow.setup.providers import PROVIDERS, ProviderInfo, default_model
from crow_acp.config.credentials import StoredCredentials

SHOWN_MODELS = 40
LOCAL_URL = "http://localhost:8080/v1"
Ask = Callable[[str], str]


def say(line: str = "") -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def interactive(ask: Ask = input, ask_hidden: Ask = getpass.getpass) -> StoredCredentials:
    """The credentials the user chose and the provider accepted."""
    provider = _choose_provider(ask)
    base_url = provider.base_url or _ask_url(ask)
    while True:
        hint = "): " if provider.needs_key else ", empty for none): "
        key = ask_hidden("API key (input hidden" + hint).strip() or None
        if key is None and provider.needs_key:
            say(f"{provider.label} needs a key.")
            continue
        models, problem = list_models(provider.api, base_url, key)
        if problem:
            say(f"The model list could not be had: {problem}")
        model = _choose_model(ask, models, default_model(provider, models))
        say(f"Checking the key with one tiny request to {base_url} ...")
        problem = check_key(provider.api, base_url, key, model)
        if problem is None:
            return StoredCredentials(provider.id, provider.api, base_url, model, key)
        say(f"The provider said: {problem}")
        say("Try again (Ctrl-C to stop; nothing has been written).")


def _choose_provider(ask: Ask) -> ProviderInfo:
    choices = list(PROVIDERS.values())
    say("Which provider?")
    for number, info in enumerate(choices, 1):
        say(f"  {number}. {info.label}")
    while True:
        answer = ask("Provider [1]: ").strip().lower() or "1"
        if answer.isdigit() and 1 <= int(answer) <= len(choices):
            return choices[int(answer) - 1]
        if answer in PROVIDERS:
            return PROVIDERS[answer]
        say(f"Type a number from 1 to {len(choices)}.")


def _ask_url(ask: Ask) -> str:
    while True:
        url = ask(f"Base URL [{LOCAL_URL}]: ").strip() or LOCAL_URL
        if url.startswith(("http://", "https://")):
            return url
        say("The URL starts with http:// or https://.")


def _choose_model(ask: Ask, models: list[str], default: str | None) -> str:
    for number, model in enumerate(models[:SHOWN_MODELS], 1):
        say(f"  {number}. {model}")
    if len(models) > SHOWN_MODELS:
        say(f"  ... and {len(models) - SHOWN_MODELS} more: type the id")
    hint = f" [{default}]" if default else ""
    while True:
        answer = ask(("Model (a number or an id)" if models else "Model id") + hint + ": ").strip() or (default or "")
        if answer.isdigit() and 1 <= int(answer) <= min(len(models), SHOWN_MODELS):
            return models[int(answer) - 1]
        if answer and not answer.isdigit():
            return answer
