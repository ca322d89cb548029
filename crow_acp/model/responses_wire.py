"""The `responses` wire: OpenAI Responses through the openai client's post(), streamed as neutral deltas.

response.output_text.delta              -> TextChunk
response.reasoning_summary_text.delta   -> ReasoningChunk
function_call items and argument deltas -> ToolCallChunk
reasoning items, whole (encrypted_content included) -> one AttachmentChunk, sent back in place
response.completed's usage              -> Usage (input_tokens_details.cached_tokens as cache reads)
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio

from ..errors import ModelError
from ..events import Usage
from ..history import Attachment
from ..util.secrets import dumps, redact_json
from ..util.text import clean_text
from .client import (
    CUT_OFF,
    AttachmentChunk,
    Finish,
    OpenAIModelClient,
    ReasoningChunk,
    StreamDelta,
    TextChunk,
    ToolCallChunk,
    describe_api_error,
)
from .limits import Deadline, StreamRepair, read_stream
from .responses_request import WIRE, responses_body

log = logging.getLogger(__name__)


class ResponsesModelClient(OpenAIModelClient):
    """The chat wire's client (key, base URL, retries), posting to /responses instead."""

    async def _post(self, body: dict[str, Any]) -> Any:
        from openai import AsyncStream

        content = dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        options: Any = {"security": {"bearer_auth": True}}
        if body.get("stream"):
            return await self._openai().post("/responses", cast_to=object, content=content, stream=True,
                                             options=options, stream_cls=AsyncStream[object])  # fmt: skip
        return await self._openai().post("/responses", cast_to=object, content=content, options=options)

    async def stream(
        self, messages: list[dict], tools: list[dict], *, reasoning_effort: str | None = None
    ) -> AsyncIterator[StreamDelta]:
        await self._ready()
        import openai

        limits = self.config.timeouts
        deadline = Deadline(limits.model_first_byte, limits.model_idle, limits.model)
        reader, stream = _Reader(self.profile.model), None
        try:
            body = {**responses_body(self.profile, messages, tools, reasoning_effort), **self.profile.extra_body}
            stream = await deadline.wait(self._post_valid({**body, "stream": True}))
            async for delta in read_stream(deadline, stream, reader):
                yield delta
        except openai.APIError as exc:
            if reader.started and not reader.finished:
                raise ModelError(f"{CUT_OFF} ({exc.__cause__ or exc})") from exc
            raise ModelError(describe_api_error(exc, self.profile.base_url, self.profile.api_key_env)) from exc
        except UnicodeDecodeError as exc:
            raise ModelError(f"{CUT_OFF}: it sent bytes that are not UTF-8 ({exc.reason})") from exc
        finally:
            deadline.close()
            if stream is not None:
                with anyio.CancelScope(shield=True):
                    await stream.close()
        if reader.failure:
            raise ModelError(f"The model endpoint ({self.profile.base_url or 'the OpenAI API'}) {reader.failure}")
        if not reader.finished:
            raise ModelError(CUT_OFF)

    async def complete(self, messages: list[dict]) -> str:
        await self._ready()
        import openai

        limit = self.config.timeouts.model
        try:
            body = {**responses_body(self.profile, redact_json(messages), [], None), **self.profile.extra_body}
            with anyio.fail_after(limit):
                reply = await self._post_valid(body)
        except TimeoutError as exc:
            raise ModelError(f"The model's reply took longer than {limit:g} s (timeouts.model).") from exc
        except openai.APIError as exc:
            raise ModelError(describe_api_error(exc, self.profile.base_url, self.profile.api_key_env)) from exc
        texts = [
            part.get("text")
            for item in (reply.get("output") if isinstance(reply, dict) else None) or ()
            if isinstance(item, dict) and item.get("type") == "message"
            for part in item.get("content") or ()
            if isinstance(part, dict) and part.get("type") == "output_text"
        ]
        return clean_text("".join(text for text in texts if isinstance(text, str)))


@dataclass
class _Reader:
    model: str
    calls: dict[str, int] = field(default_factory=dict)
    """A function_call item's id -> its number among the reply's calls."""
    reasoning: list[dict[str, Any]] = field(default_factory=list)
    started: bool = False
    finished: bool = False
    failure: str | None = None
    repair: StreamRepair = field(default_factory=StreamRepair)

    def read(self, event: Any) -> list[StreamDelta]:
        self.started = True
        kind = event.get("type") if isinstance(event, dict) else None
        delta = event.get("delta") if isinstance(event, dict) else None
        if kind == "response.output_text.delta" and isinstance(delta, str):
            return [TextChunk(text)] if (text := self.repair.text(delta)) else []
        if kind == "response.reasoning_summary_text.delta" and isinstance(delta, str):
            return [ReasoningChunk(text)] if (text := self.repair.reasoning(delta)) else []
        if kind == "response.function_call_arguments.delta" and isinstance(delta, str):
            index = self.calls.get(str(event.get("item_id")))
            return [] if index is None else [ToolCallChunk(index, None, None, self.repair.arguments(index, delta))]
        item = event.get("item") if isinstance(event, dict) else None
        if kind == "response.output_item.added" and isinstance(item, dict) and item.get("type") == "function_call":
            self.calls[str(item.get("id"))] = index = len(self.calls)
            return [ToolCallChunk(index, self.repair.name(item.get("call_id")), self.repair.name(item.get("name")), "")]
        if kind == "response.output_item.done" and isinstance(item, dict) and item.get("type") == "reasoning":
            self.reasoning.append(item)  # as it came: the encrypted content is the model's, not crow's
        elif kind in ("response.completed", "response.incomplete"):
            return self._end(event.get("response") or {}, "stop" if kind == "response.completed" else "length")
        elif kind in ("response.failed", "error"):
            error = (event.get("response") or {}).get("error") if kind == "response.failed" else event
            error = error if isinstance(error, dict) else {}
            self.failure = f"sent an error mid-stream: {error.get('code')}: {error.get('message')}"
            self.finished = True
        elif not (isinstance(kind, str) and kind.startswith("response.")):
            log.info("ignored an unknown Responses stream event %r", kind)
        return []

    def _end(self, response: dict[str, Any], reason: str) -> list[StreamDelta]:
        self.finished = True
        text, reasoning, arguments = self.repair.leftovers()
        out: list[StreamDelta] = [ReasoningChunk(reasoning)] if reasoning else []
        out += [TextChunk(text)] if text else []
        out += [ToolCallChunk(index, None, None, piece) for index, piece in arguments.items()]
        if self.reasoning:
            out.append(AttachmentChunk(Attachment(WIRE, self.model, tuple(self.reasoning))))
        usage: dict[str, Any] = response["usage"] if isinstance(response.get("usage"), dict) else {}
        details = usage.get("input_tokens_details")
        cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
        out.append(Usage(_int(usage.get("input_tokens")), _int(usage.get("output_tokens")), cached))
        return [*out, Finish("tool_calls" if self.calls and reason == "stop" else reason)]


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
