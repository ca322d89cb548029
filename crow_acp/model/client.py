"""The model seam: the ModelClient protocol the loop talks to, and the OpenAI-compatible client behind it.

    ModelClient            what the loop needs: stream() typed deltas, complete(), close(), a profile
    OpenAIModelClient      chat completions over HTTP (the `chat` wire)
    anthropic_wire.AnthropicModelClient   Anthropic Messages (the `anthropic` wire)
    responses_wire.ResponsesModelClient   OpenAI Responses (the `responses` wire)
    function_model.FunctionModel   a script or a Python function, in process (tests, offline runs)

Each wire imports its SDK on first use: `crow acp` must answer
`initialize` without paying for it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from ..config import Config, ModelProfile
from ..errors import ConfigError, ModelError
from ..events import Usage
from ..history import Attachment, without_attachments
from ..util.imports import off_loop
from ..util.secrets import dumps, redact_json
from ..util.text import clean_text, cleaned_copy
from .describe import describe_api_error
from .limits import Deadline, StreamRepair

if TYPE_CHECKING:
    from openai import AsyncOpenAI

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TextChunk:
    text: str


@dataclass(frozen=True)
class ReasoningChunk:
    text: str


@dataclass(frozen=True)
class ToolCallChunk:
    index: int
    id: str | None
    name: str | None
    arguments: str


@dataclass(frozen=True)
class Finish:
    reason: str
    """The chat-completions name whatever the wire: stop, tool_calls or length."""


@dataclass(frozen=True)
class AttachmentChunk:
    """The reply's provider-only parts (signed thinking, encrypted reasoning), once, before Finish."""

    attachment: Attachment


CUT_OFF = "The model's reply was cut off: the stream ended before the model finished"
StreamDelta = TextChunk | ReasoningChunk | ToolCallChunk | AttachmentChunk | Usage | Finish


class ModelClient(Protocol):
    """The model seam: every model call of a session goes through one of these."""

    profile: ModelProfile
    """The model's settings: its id, context window, reasoning support, prices."""

    def stream(
        self, messages: list[dict], tools: list[dict], *, reasoning_effort: str | None = None
    ) -> AsyncIterator[StreamDelta]:
        """One reply as typed deltas, ending with Finish (and Usage when known); a failure is a ModelError."""
        ...

    async def complete(self, messages: list[dict]) -> str:
        """A plain, non-streaming call (side prompts, summaries); a failure is a ModelError."""
        ...

    async def close(self) -> None: ...


class OpenAIModelClient:
    """Streams replies from the configured model; retries are the openai client's (429, 5xx, timeouts)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.profile = config.profile()
        self._client: AsyncOpenAI | None = None

    async def _ready(self) -> None:
        """Make the client off the event loop the first time, in turn with the other background imports.

        Importing openai and building its HTTP client take a third of a second: on the loop, every
        other session's stream would stall meanwhile. And the prewarm thread may be importing openai
        right now: a second thread importing it at the same time can get a half-made module."""
        if self._client is None:
            await off_loop(self._openai)

    def _openai(self) -> AsyncOpenAI:
        if self._client is None:
            from .retries import reporting_client

            self._client = reporting_client()(
                api_key=self.config.api_key(),
                base_url=self.profile.base_url,
                max_retries=self.config.max_retries,
                # Only a backstop: model_limits.Deadline ends every request first, naming the setting.
                timeout=self.config.timeouts.model + 5,
            )
        return self._client

    async def _post(self, body: dict[str, Any]) -> Any:
        """POST the body as it is: a stream of the chunks as plain dicts, or (not streamed) the reply's JSON.

        crow's messages are plain JSON already: create() would walk the whole history through
        openai's typed transform on every call, O(history) in pure Python. And typed chunk objects
        cost more to build than everything else crow does per chunk; the loop reads five fields.
        create() also imports its own module on first use: a title asked after the first turn did
        that beside the second turn, whose first chunk waited for the GIL.
        """
        from openai import AsyncStream

        # Serialized here as openai would (compact, UTF-8), so that no model key leaves crow in a request.
        content = dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        client = self._openai()
        if body.get("stream"):  # object: the client yields each chunk's JSON untouched
            return await client.post("/chat/completions", cast_to=object, content=content, stream=True,
                                     options={"security": {"bearer_auth": True}},
                                     stream_cls=AsyncStream[object])  # fmt: skip
        return await client.post("/chat/completions", cast_to=object, content=content,
                                 options={"security": {"bearer_auth": True}})  # fmt: skip

    def _params(self, messages: list[dict], tools: list[dict], reasoning_effort: str | None = None) -> dict[str, Any]:
        # Another wire's attachments never reach a chat-completions server (strict ones refuse unknown keys).
        params: dict[str, Any] = {"model": self.profile.model, "messages": [without_attachments(m) for m in messages]}
        if tools:
            params["tools"] = tools
        profile = self.profile
        optional = {
            "max_tokens": profile.max_tokens,
            "temperature": profile.temperature,
            "reasoning_effort": profile.reasoning_effort,
        }
        params |= {key: value for key, value in optional.items() if value is not None}
        if reasoning_effort is not None:  # the session's thinking level, over the profile's default
            params["reasoning_effort"] = reasoning_effort
        return params

    async def stream(
        self, messages: list[dict], tools: list[dict], *, reasoning_effort: str | None = None
    ) -> AsyncIterator[StreamDelta]:
        await self._ready()
        import openai

        limits = self.config.timeouts
        deadline = Deadline(limits.model_first_byte, limits.model_idle, limits.model)
        repair, started, finished, stream = StreamRepair(), False, False, None
        try:
            body = {**self._params(messages, tools, reasoning_effort), **self.profile.extra_body}
            stream = await deadline.wait(
                self._post_valid({**body, "stream": True, "stream_options": {"include_usage": True}})
            )
            while True:
                try:
                    chunk = await deadline.next_chunk(stream)
                except StopAsyncIteration:
                    break
                started = True
                for delta in _deltas(chunk, repair):
                    finished = finished or isinstance(delta, Finish)
                    yield delta
        except openai.APIError as exc:
            if started and not finished:
                raise ModelError(f"{CUT_OFF} ({exc.__cause__ or exc})") from exc
            raise ModelError(describe_api_error(exc, self.profile.base_url, self.profile.api_key_env)) from exc
        except UnicodeDecodeError as exc:  # openai decodes SSE lines strictly: the reply is lost from here
            raise ModelError(f"{CUT_OFF}: it sent bytes that are not UTF-8 ({exc.reason})") from exc
        finally:
            deadline.close()
            if stream is not None:
                with anyio.CancelScope(shield=True):  # a timeout or a cancel: drop the connection now
                    await stream.close()
        if not finished:
            raise ModelError(CUT_OFF)

    async def _post_valid(self, body: dict[str, Any]) -> Any:
        """POST the body; if some text in it is not valid Unicode, a repaired copy instead of failing forever."""
        try:
            return await self._post(body)
        except UnicodeEncodeError:
            log.warning("repaired invalid Unicode in a model request")
            return await self._post(cleaned_copy(body))

    async def complete(self, messages: list[dict]) -> str:
        """A plain, non-streaming call (side prompts, summaries), bounded by timeouts.model."""
        await self._ready()
        import openai

        limit = self.config.timeouts.model
        try:
            body = {**self._params(redact_json(messages), []), **self.profile.extra_body}
            with anyio.fail_after(limit):  # the whole call, retries included
                reply = await self._post_valid(body)
        except TimeoutError as exc:
            raise ModelError(f"The model's reply took longer than {limit:g} s (timeouts.model).") from exc
        except openai.APIError as exc:
            raise ModelError(describe_api_error(exc, self.profile.base_url, self.profile.api_key_env)) from exc
        return clean_text(_reply_text(reply))

    async def close(self) -> None:
        """Close the HTTP connections; left to the garbage collector, they close on whatever loop runs then."""
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()


def _reply_text(reply: Any) -> str:
    """The text of a chat completion's first choice; "" for anything else (the endpoint is not trusted)."""
    choices = reply.get("choices") if isinstance(reply, dict) else None
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    message = first.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) else ""


def prewarm(model: ModelClient) -> None:
    """Import openai and make the model's client now, so that the first prompt need not: they take
    most of a second. Run it off the loop (imports.off_loop) once a session exists, not at
    initialize: a session/load right after it would replay slower, competing for the GIL."""
    if isinstance(model, OpenAIModelClient):
        try:
            model._openai()
        except ConfigError:  # no API key: the first prompt says so
            pass


def _deltas(chunk: dict[str, Any], repair: StreamRepair) -> list[StreamDelta]:
    out: list[StreamDelta] = []
    if usage := chunk.get("usage"):
        details = usage.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        cached = cached if isinstance(cached, int) else 0
        out.append(Usage(usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0, cached))
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta") or {}
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")  # DeepSeek/vLLM, OpenRouter
        if isinstance(reasoning, str) and (reasoning := repair.reasoning(reasoning)):
            out.append(ReasoningChunk(reasoning))
        if isinstance(content := delta.get("content"), str) and (content := repair.text(content)):
            out.append(TextChunk(content))
        for call in delta.get("tool_calls") or ():
            function, index = call.get("function") or {}, call.get("index", 0)
            arguments = repair.arguments(index, function.get("arguments") or "")
            out.append(ToolCallChunk(index, repair.name(call.get("id")), repair.name(function.get("name")), arguments))
        if reason := choice.get("finish_reason"):
            out += _leftovers(repair)  # a lone half held back at the very end: U+FFFD, before the finish
            out.append(Finish(reason))
    return out


def _leftovers(repair: StreamRepair) -> list[StreamDelta]:
    text, reasoning, arguments = repair.leftovers()
    out: list[StreamDelta] = [ReasoningChunk(reasoning)] if reasoning else []
    out += [TextChunk(text)] if text else []
    return out + [ToolCallChunk(index, None, None, piece) for index, piece in arguments.items()]
