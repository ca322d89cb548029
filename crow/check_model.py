"""`crow check`'s model section: the profile, and the endpoint asked for its model list."""

from __future__ import annotations

import difflib
import os
from typing import Any

from crow.check_report import Report

PROBE_TIMEOUT = 10.0


def model_section(report: Report, config: Any, answer: str | list[str]) -> None:
    profile = config.profile()
    from crow_acp.config.key_source import key_source

    own = config.models.get(config.model)
    source = (
        "[models." + config.model + "] base_url"
        if own and own.base_url
        else "OPENAI_BASE_URL"
        if os.environ.get("OPENAI_BASE_URL")
        else "credentials.toml, `crow setup`"
        if profile.base_url
        else "the OpenAI default"
    )
    report.section("model")
    report.item(
        "profile", config.model if config.model in config.models else f"{config.model} (not a profile: a raw id)"
    )
    report.item("model id", profile.model)
    report.item("endpoint", f"{profile.base_url or 'https://api.openai.com/v1'} (from {source})")
    report.item("key", key_source(config) or f"none ({profile.api_key_env} is not set; run `crow setup`)")
    if isinstance(answer, str):
        report.bad(answer)
        return
    report.ok("the endpoint answers")
    if answer and profile.model not in answer:  # an empty list: the endpoint does not say what it serves
        near = difflib.get_close_matches(profile.model, answer, n=3, cutoff=0.4)
        hint = f"; closest: {', '.join(map(repr, near))}" if near else ""  # repr: ids are the endpoint's text
        report.warn(f"model id {profile.model!r} is not in the endpoint's /models list{hint}")


async def endpoint(config: Any) -> str | list[str]:
    """The model ids the endpoint lists; otherwise what is wrong, in one line."""
    from crow_acp.errors import ConfigError

    profile = config.profile()
    try:
        key = config.api_key()
    except ConfigError as exc:
        return str(exc)
    import openai

    from crow_acp.model.client import describe_api_error

    client = openai.AsyncOpenAI(api_key=key, base_url=profile.base_url, max_retries=0, timeout=PROBE_TIMEOUT)
    try:
        page = await client.models.list()
    except openai.APIError as exc:
        return describe_api_error(exc, profile.base_url, profile.api_key_env)
    finally:
        await client.close()
    return [model.id for model in page.data if isinstance(model.id, str)]
