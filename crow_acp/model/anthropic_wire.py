"""The `anthropic` wire: Anthropic Messages through the anthropic SDK, streamed as crow's neutral deltas.

    text_delta            -> TextChunk
    thinking_delta        -> ReasoningChunk (the editor sees thinking only as thought chunks)
    tool_use + input_json -> ToolCallChunk
    thinking / redacted_thinking blocks, whole and signed -> one AttachmentChunk, sent back unchanged
    usage (message_start, message_delta) -> Usage with the cache reads and writes

The SDK is imported on first use, off the event loop (as the chat wire does with openai). Requests go
through the client's low-level post() as plain JSON, and events come back as plain dicts.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import anyio

from ..config import Config
from ..errors import ConfigError, ModelError
from ..events import Usage
from ..history import Attachment
from ..util.imports import off_loop
from ..util.secrets import dumps, redact_json
from ..util.text import clean_text
from .anthropic_request import WIRE, messages_body
from .client import CUT_OFF, AttachmentChunk, Finish, ReasoningChunk, StreamDelta, TextChunk, ToolCallChunk
from .limits import Deadline, StreamRepair, read_stream

log = logging.getLogger(__name__)

FINISH = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length"}
KEY_ENV = "ANTHROPIC_API_KEY"


class AnthropicModelClient:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.profile = config.profile()
        self._client: Any = None

    def _anthropic(self) -> Any:
        if self._client is None:
            from .retries import reporting_anthropic

            base_url = self.profile.base_url
            if base_url is not None:  # crow's base URLs end in /v1; the SDK adds /v1/messages itself
                base_url = base_url.rstrip("/").removesuffix("/v1")
            self._client = reporting_anthropic()(
                api_key=self._api_key(base_url),
                base_url=base_url,
                max_retries=self.config.max_retries,
                timeout=self.config.timeouts.model + 5,  # a backstop: Deadline ends every request first
            )
        return self._client

    def _api_key(self, base_url: str | None) -> str | None:
        """The profile's own key, else what the SDK reads (ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN)."""
        profile = self.profile
        own = os.environ.get(profile.api_key_env) if profile.api_key_env != "OPENAI_API_KEY" else None
        if key := own or profile.api_key or os.environ.get(KEY_ENV):
            return key
        if os.environ.get("ANTHROPIC_AUTH_TOKEN"):
            return None
        url = base_url or os.environ.get("ANTHROPIC_BASE_URL")
        if url and urlsplit(url).hostname != "api.anthropic.com":
            return "none"  # a local or scripted server
        raise ConfigError(f"No model API key: set {KEY_ENV} in the environment (in Zed: agent_servers.Crow.env).")

    async def _post(self, body: dict[str, Any]) -> Any:
        from anthropic import AsyncStream

        content = dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if body.get("stream"):
            return await self._anthropic().post(
                "/v1/messages", cast_to=object, content=content, options={"headers": headers},
                stream=True, stream_cls=AsyncStream[object],
            )  # fmt: skip
        return await self._anthropic().post(
            "/v1/messages", cast_to=object, content=content, options={"headers": headers}
        )

    async def stream(
        self, messages: list[dict], tools: list[dict], *, reasoning_effort: str | None = None
    ) -> AsyncIterator[StreamDelta]:
        await off_loop(self._anthropic)
        import anthropic
        import httpx2  # the SDK's transport: it lets a connection lost mid-stream through unwrapped

        limits = self.config.timeouts
        deadline = Deadline(limits.model_first_byte, limits.model_idle, limits.model)
        reader, stream = _Reader(self.profile.model), None
        try:
            body = {**messages_body(self.profile, messages, tools, reasoning_effort), **self.profile.extra_body}
            stream = await deadline.wait(self._post({**body, "stream": True}))
            async for delta in read_stream(deadline, stream, reader):
                yield delta
        except anthropic.APIError as exc:
            if reader.started and not reader.finished:
                raise ModelError(f"{CUT_OFF} ({describe(exc, self.profile.base_url)})") from exc
            raise ModelError(describe(exc, self.profile.base_url)) from exc
        except httpx2.TransportError as exc:
            raise ModelError(f"{CUT_OFF} ({exc})") from exc
        except UnicodeDecodeError as exc:
            raise ModelError(f"{CUT_OFF}: it sent bytes that are not UTF-8 ({exc.reason})") from exc
        finally:
            deadline.close()
            if stream is not None:
                with anyio.CancelScope(shield=True):
                    await stream.close()
        if not reader.finished:
            raise ModelError(CUT_OFF)

    async def complete(self, messages: list[dict]) -> str:
        await off_loop(self._anthropic)
        import anthropic

        limit = self.config.timeouts.model
        try:
            body = {**messages_body(self.profile, redact_json(messages), [], None), **self.profile.extra_body}
            body.pop("thinking", None)
            with anyio.fail_after(limit):
                reply = await self._post(body)
        except TimeoutError as exc:
            raise ModelError(f"The model's reply took longer than {limit:g} s (timeouts.model).") from exc
        except anthropic.APIError as exc:
            raise ModelError(describe(exc, self.profile.base_url)) from exc
        blocks = reply.get("content") if isinstance(reply, dict) else None
        texts = [b.get("text") for b in blocks or () if isinstance(b, dict) and b.get("type") == "text"]
        return clean_text("".join(text for text in texts if isinstance(text, str)))

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()


@dataclass
class _Block:
    kind: str
    data: dict[str, Any]
    call: int | None = None
    """tool_use: its number among the reply's calls (ToolCallChunk's index)."""
    thinking: list[str] = field(default_factory=list)
    signature: list[str] = field(default_factory=list)

    def whole(self) -> dict[str, Any]:
        """The block as the API wants it back: thinking and signature joined, the rest as it came."""
        if self.kind != "thinking":
            return self.data
        return {**self.data, "thinking": "".join(self.thinking), "signature": "".join(self.signature)}


@dataclass
class _Reader:
    """The state of one streamed message: its open blocks, its usage, the thinking to attach."""

    model: str
    blocks: dict[int, _Block] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=dict)
    calls: int = 0
    reason: str = "stop"
    started: bool = False
    finished: bool = False
    repair: StreamRepair = field(default_factory=StreamRepair)

    def read(self, event: Any) -> list[StreamDelta]:
        self.started = True
        kind = event.get("type") if isinstance(event, dict) else None
        if kind == "message_start":
            self._count((event.get("message") or {}).get("usage"))
        elif kind == "content_block_start" and isinstance(index := event.get("index"), int):
            return self._start(index, event.get("content_block") or {})
        elif kind == "content_block_delta" and isinstance(index := event.get("index"), int):
            return self._delta(self.blocks.get(index), event.get("delta") or {})
        elif kind == "message_delta":
            self._count(event.get("usage"))
            stop = (event.get("delta") or {}).get("stop_reason")
            self.reason = FINISH.get(stop, "stop") if isinstance(stop, str) else self.reason
        elif kind == "message_stop":
            return self._end()
        elif kind not in ("content_block_stop", "ping"):
            log.info("ignored an unknown Anthropic stream event %r", kind)  # the API may add event types
        return []

    def _count(self, usage: Any) -> None:
        for key, value in (usage or {}).items():
            if isinstance(value, int) and not isinstance(value, bool):
                self.usage[key] = value

    def _start(self, index: int, block: dict[str, Any]) -> list[StreamDelta]:
        kind = block.get("type")
        if kind == "tool_use":
            self.blocks[index] = _Block("tool_use", block, self.calls)
            self.calls += 1
            name, given = self.repair.name(block.get("name")), block.get("input")
            # The API streams the input as input_json deltas after an empty one; a whole one is taken as it is.
            arguments = json.dumps(given) if isinstance(given, dict) and given else ""
            return [ToolCallChunk(self.calls - 1, self.repair.name(block.get("id")), name, arguments)]
        if kind in ("thinking", "redacted_thinking", "text"):
            self.blocks[index] = block_ = _Block(kind, dict(block))
            text = block.get("text") if kind == "text" else block.get("thinking")
            if kind == "thinking":
                block_.data["thinking"], block_.data["signature"] = "", ""
                block_.signature.append(str(block.get("signature") or ""))
            if isinstance(text, str) and text:
                return self._delta(block_, {"type": f"{kind}_delta", kind: text})
        return []

    def _delta(self, block: _Block | None, delta: dict[str, Any]) -> list[StreamDelta]:
        kind = delta.get("type")
        if block is None:
            return []
        if kind == "text_delta" and isinstance(text := delta.get("text"), str) and (text := self.repair.text(text)):
            return [TextChunk(text)]
        if kind == "thinking_delta" and isinstance(text := delta.get("thinking"), str):
            block.thinking.append(text)  # kept as sent: the signature covers these bytes
            return [ReasoningChunk(shown)] if (shown := self.repair.reasoning(text)) else []
        if kind == "signature_delta" and isinstance(signature := delta.get("signature"), str):
            block.signature.append(signature)
        if (
            kind == "input_json_delta"
            and isinstance(piece := delta.get("partial_json"), str)
            and block.call is not None
        ):
            return [ToolCallChunk(block.call, None, None, self.repair.arguments(block.call, piece))]
        return []

    def _end(self) -> list[StreamDelta]:
        self.finished = True
        text, reasoning, arguments = self.repair.leftovers()
        out: list[StreamDelta] = [ReasoningChunk(reasoning)] if reasoning else []
        out += [TextChunk(text)] if text else []
        out += [ToolCallChunk(index, None, None, piece) for index, piece in arguments.items()]
        thinking = [b.whole() for _, b in sorted(self.blocks.items()) if b.kind in ("thinking", "redacted_thinking")]
        if thinking:
            out.append(AttachmentChunk(Attachment(WIRE, self.model, tuple(thinking))))
        read, written = self.usage.get("cache_read_input_tokens", 0), self.usage.get("cache_creation_input_tokens", 0)
        prompt = self.usage.get("input_tokens", 0) + read + written
        out.append(Usage(prompt, self.usage.get("output_tokens", 0), read, written))
        return [*out, Finish(self.reason)]


def describe(exc: Exception, base_url: str | None) -> str:
    """One sentence a user can act on, with the API's own error type and message."""
    import anthropic

    where = base_url or "the Anthropic API"
    if isinstance(exc, anthropic.AuthenticationError):
        return f"The model endpoint ({where}) rejected the API key (401). Check {KEY_ENV}."
    if isinstance(exc, anthropic.APITimeoutError):
        return f"The model endpoint ({where}) timed out."
    if isinstance(exc, anthropic.APIConnectionError):
        return f"Could not reach the model endpoint ({where}): {exc.__cause__ or exc}."
    if isinstance(exc, anthropic.APIStatusError):
        body = exc.body if isinstance(exc.body, dict) else {}
        error = body.get("error") if isinstance(body.get("error"), dict) else {}
        text = f"{error.get('type')}: {error.get('message')}" if error else exc.message
        if exc.status_code == 200:  # an error event in the stream
            return f"the model endpoint ({where}) sent an error mid-stream: {text}"
        return f"The model endpoint ({where}) answered HTTP {exc.status_code}: {text}"
    return f"The model call failed: {exc}"
