"""What `crow setup` asks the provider: its model list (GET /models) and one tiny request that checks the
key. Failures come back as the provider's own message, on one line; the key is never part of one."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from crow_acp.config.credentials import Api
from crow_acp.errors import ModelError

TIMEOUT = 20.0
MAX_ANSWER = 4 * 1024 * 1024


def list_models(api: Api, base_url: str, key: str | None) -> tuple[list[str], str | None]:
    """The provider's model ids, sorted, and why there are none when the list cannot be had (the user
    types a model id instead)."""
    try:
        answer = _call("GET", f"{base_url.rstrip('/')}/models", api, key, None)
    except ProbeError as exc:
        return [], _hidden(str(exc), key)
    data = answer.get("data") if isinstance(answer, dict) else None
    ids = {item.get("id") for item in data if isinstance(item, dict)} if isinstance(data, list) else set()
    return sorted(i for i in ids if isinstance(i, str) and i and len(i) <= 200), None


def check_key(api: Api, base_url: str, key: str | None, model: str) -> str | None:
    """None when one tiny request with this key and model is answered; else the provider's message."""
    url = base_url.rstrip("/")
    body: dict[str, Any] = {"model": model, "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]}
    try:
        _call("POST", f"{url}/messages" if api == "anthropic" else f"{url}/chat/completions", api, key, body)
    except ProbeError as exc:
        return _hidden(str(exc), key)
    return None


def _hidden(message: str, key: str | None) -> str:
    """A provider may quote the key it refused: never shown."""
    return message.replace(key, "[key]") if key else message


class ProbeError(ModelError):
    """The provider refused or did not answer; the message is its own, on one line."""


def _call(method: str, url: str, api: Api, key: str | None, body: dict[str, Any] | None) -> Any:
    headers = {"Content-Type": "application/json", "User-Agent": "crow-setup"}
    if key and api == "anthropic":
        headers |= {"x-api-key": key, "anthropic-version": "2023-06-01"}
    elif key:
        headers["Authorization"] = f"Bearer {key}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:  # the URL is http(s): checked by the caller
            return json.loads(response.read(MAX_ANSWER) or b"null")
    except urllib.error.HTTPError as exc:
        raise ProbeError(f"HTTP {exc.code}: {_message(exc.read(MAX_ANSWER))}") from None
    except urllib.error.URLError as exc:
        raise ProbeError(f"{url} did not answer: {exc.reason}") from None
    except OSError as exc:  # a timeout or a reset while reading
        raise ProbeError(f"{url} did not answer: {exc}") from None
    except ValueError as exc:
        raise ProbeError(f"{url} answered something that is not JSON ({exc})") from None


def one_line(text: str) -> str:
    return " ".join(text.split())


def _message(raw: bytes) -> str:
    """The provider's own error message ({"error": {"message": ...}} or {"error": "..."}), on one line."""
    text = raw.decode("utf-8", "replace")
    try:
        error = json.loads(text).get("error")
    except (ValueError, AttributeError):
        return one_line(text)[:300] or "no message"
    message = error.get("message") if isinstance(error, dict) else error
    return one_line(str(message))[:300] if message else one_line(text)[:300]
