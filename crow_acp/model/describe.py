"""What an OpenAI-client error means, in one sentence a user can act on (the chat and responses wires)."""

from __future__ import annotations

from typing import Any


def describe_api_error(exc: Exception, base_url: str | None, key_env: str = "OPENAI_API_KEY") -> str:
    """One sentence a user can act on."""
    import openai

    where = base_url or "the OpenAI API"
    if isinstance(exc, openai.AuthenticationError):
        return f"The model endpoint ({where}) rejected the API key (401). Check {key_env}."
    if isinstance(exc, openai.APITimeoutError):
        return f"The model endpoint ({where}) timed out."
    if isinstance(exc, openai.APIConnectionError):
        return f"Could not reach the model endpoint ({where}): {exc.__cause__ or exc}."
    if isinstance(exc, openai.NotFoundError) and not _names_the_model(exc) and base_url:
        return _not_found(exc, base_url)
    if isinstance(exc, openai.APIStatusError):
        return f"The model endpoint ({where}) answered HTTP {exc.status_code}: {_error_message(exc)}"
    return f"The model call failed: {exc}"


def _not_found(exc: Any, base_url: str) -> str:
    """A 404 for the route itself (not for the model id): most often a base URL without its /v1."""
    path = exc.request.url.path
    if base_url.rstrip("/").endswith("/v1"):
        return f"The model endpoint ({base_url}) answered 404 for {path}: is this the API's base URL?"
    return f"The model endpoint ({base_url}) answered 404 for {path}: does the base URL end in /v1?"


def _names_the_model(exc: Any) -> bool:
    """OpenAI, vLLM and others answer 404 for an unknown model id too; then their message says so."""
    body: dict = exc.body if isinstance(exc.body, dict) else {}
    error: dict = body["error"] if isinstance(body.get("error"), dict) else body
    return error.get("code") == "model_not_found" or "model" in str(error.get("message") or "").lower()


def _error_message(exc: Any) -> str:
    body = exc.body
    if isinstance(body, dict):
        return str(body.get("message") or body.get("error", {}).get("message") or body)
    return exc.message
