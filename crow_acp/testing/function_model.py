"""FunctionModel: a model client that runs a script or a Python function in process, without HTTP.

    model = FunctionModel([Reply(text="hi", tool_calls=[ToolCall("read", {"path": "a"})]), Reply(text="done")])
    model.install(agent)                       # every session of the agent talks to it
    await agent.prompt(prompt=[text_block("go")], session_id=sid)
    model.requests[-1]["messages"]             # what the loop sent, as the HTTP body would hold it

It meets the same ModelClient seam the loop uses (llm.py), so a test drives the real loop, hooks,
tools, permissions and compaction, and only the model's intelligence is scripted; what is left
out is the wire (HTTP, SSE, retries), which the ScriptedModel tests keep covering.

A script entry is a `Reply` or a `Fault` (crow_acp.testing, the same ones ScriptedModel serves),
or a responder: `fn(request) -> Reply | Fault | str`, sync or async, or an async generator that
yields the deltas itself (str for text, or TextChunk, ReasoningChunk, ToolCallChunk, Usage,
Finish from model/client.py; without a Finish the stream counts as cut off, as over HTTP). A Reply
streams as a server would: reasoning, text in token-sized pieces, each tool call's name then its
arguments split in several fragments, usage, finish. Faults raise the
ModelError the HTTP client raises (after its retries); `cut_after` streams part of the reply first;
`hang` waits until the turn is cancelled.
"""

from __future__ import annotations

import inspect
import itertools
import json
import re
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, NoReturn

import anyio

from ..config import ModelProfile
from ..errors import ModelError
from ..events import Usage
from ..model.client import CUT_OFF, Finish, ReasoningChunk, StreamDelta, TextChunk, ToolCallChunk
from . import Fault, Reply, is_title_request

if TYPE_CHECKING:
    from ..acp.agent import AcpAgent
    from ..multi import MultiAgent

Request = dict[str, Any]
"""What the loop asked for, shaped as a chat-completions body: model, messages, tools, stream, …"""
Answer = Reply | Fault | str | AsyncIterator[StreamDelta | str]
Responder = Callable[[Request], Answer | Awaitable[Answer]]
Entry = Reply | Fault | Responder


class FunctionModel:
    """A ModelClient whose replies come from a script or a function, in this process."""

    def __init__(
        self,
        script: Iterable[Entry] | Responder = (),
        *,
        default: Entry | None = None,
        profile: ModelProfile | None = None,
    ) -> None:
        self._script: deque[Entry] = deque()
        if callable(script):  # a function alone answers every call
            default = script
        else:
            self._script.extend(script)
        self.default = default
        self.profile = profile or ModelProfile(model="function-model")
        self.requests: list[Request] = []
        """Every request, in order; messages are copies taken when the call was made."""
        self.title_requests: list[Request] = []
        self.titles: Reply | Fault | None = None
        """The answer to crow's title side calls; None fails them, so sessions keep the prompt's title."""
        self._call_ids = itertools.count(1)

    def add(self, *entries: Entry) -> None:
        self._script.extend(entries)

    def install(self, agent: AcpAgent | MultiAgent) -> FunctionModel:
        """Make every session the agent (or each member of a MultiAgent) opens from now on use this model."""
        from ..multi import MultiAgent

        for member in agent.members if isinstance(agent, MultiAgent) else [agent]:
            member.models.use(self)
        return self

    # ModelClient
    async def stream(
        self, messages: list[dict], tools: list[dict], *, reasoning_effort: str | None = None
    ) -> AsyncIterator[StreamDelta]:
        effort = {"reasoning_effort": reasoning_effort} if reasoning_effort is not None else {}
        request = self._request(messages, tools, stream=True, **effort)
        answer = await self._answer(request)
        finished = False
        async for delta in _deltas(answer, request, self._call_ids):
            finished = finished or isinstance(delta, Finish)
            yield delta
        if not finished:
            raise ModelError(CUT_OFF)

    async def complete(self, messages: list[dict]) -> str:
        if is_title_request({"messages": messages}):  # crow's title side call: outside the script
            self.title_requests.append({"messages": messages})
            answer: Answer = self.titles or Fault(400, "this scripted model writes no titles")
        else:
            answer = await self._answer(self._request(messages, [], stream=False))
        if isinstance(answer, Fault):
            await _fail(answer)
        if isinstance(answer, str):
            return answer
        if isinstance(answer, Reply):
            await anyio.sleep(answer.first_delay)
            return answer.text
        return "".join([d if isinstance(d, str) else d.text async for d in answer if isinstance(d, (str, TextChunk))])

    async def close(self) -> None:
        return None

    # Plumbing
    def _request(self, messages: list[dict], tools: list[dict], **options: Any) -> Request:
        # Through JSON, as the wire would take it: what is not JSON fails here, and later edits don't leak in.
        body = {"model": self.profile.model, "messages": messages, **({"tools": tools} if tools else {}), **options}
        request = json.loads(json.dumps(body))
        self.requests.append(request)
        return request

    async def _answer(self, request: Request) -> Answer:
        entry = self._script.popleft() if self._script else self.default
        if entry is None:
            return Fault(500, "script exhausted")
        if isinstance(entry, (Reply, Fault)):
            return entry
        answer = entry(request)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer


async def _deltas(answer: Answer, request: Request, ids: Iterable[int]) -> AsyncIterator[StreamDelta]:
    if isinstance(answer, str):
        answer = Reply(text=answer)
    if isinstance(answer, Fault):
        if answer.cut_after is None:
            await _fail(answer)
        reply = answer.reply or Reply(text=answer.message)
        for delta in _reply_deltas(reply, request, ids)[: answer.cut_after]:
            yield delta
        raise ModelError(f"{CUT_OFF} (the scripted stream was cut after {answer.cut_after} deltas)")
    if isinstance(answer, Reply):
        await anyio.sleep(answer.first_delay)
        for i, delta in enumerate(_reply_deltas(answer, request, ids)):
            if i and answer.delay:
                await anyio.sleep(answer.delay)
            yield delta
        return
    async for item in answer:
        yield TextChunk(item) if isinstance(item, str) else item


async def _fail(fault: Fault) -> NoReturn:
    if fault.hang:
        await anyio.sleep_forever()  # only the turn's cancel scope ends this
    raise ModelError(f"The model endpoint (function model) answered HTTP {fault.status}: {fault.message}")


def _reply_deltas(reply: Reply, request: Request, ids: Iterable[int]) -> list[StreamDelta]:
    out: list[StreamDelta] = [ReasoningChunk(piece) for piece in _pieces(reply.reasoning, None)]
    out += [TextChunk(piece) for piece in _pieces(reply.text, reply.chunks)]
    counter = iter(ids)
    for index, call in enumerate(reply.tool_calls):
        arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
        out.append(ToolCallChunk(index, call.id or f"call_{next(counter)}", call.name, ""))
        out += [ToolCallChunk(index, None, None, part) for part in _pieces(arguments, max(3, -(-len(arguments) // 16)))]
    out.append(_usage(reply, request))
    out.append(Finish(reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")))
    return out


def _usage(reply: Reply, request: Request) -> Usage:
    if reply.usage is not None:
        return Usage(reply.usage.get("prompt_tokens") or 0, reply.usage.get("completion_tokens") or 0)
    return Usage(len(json.dumps(request["messages"])) // 4, len(reply.text) // 4 + 1)


def _pieces(text: str, n: int | None) -> list[str]:
    """Token-sized pieces (n None), or n near-equal ones: never an empty delta."""
    if not text:
        return []
    if n is None:
        return re.findall(r"\s*\S{1,4}|\s+", text)
    n = max(1, min(n, len(text)))
    size, rest = divmod(len(text), n)
    bounds = list(itertools.accumulate([0] + [size + (i < rest) for i in range(n)]))
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


__all__ = ["FunctionModel", "Request", "Responder"]
