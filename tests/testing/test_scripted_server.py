"""The scripted server, exercised through the real openai client (httpx2 underneath)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time

import httpx2
import openai
import pytest

from crow_acp.testing import Fault, Reply, ScriptedModel, ToolCall

MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@contextlib.asynccontextmanager
async def served(*script, max_retries: int = 0, **kwargs):
    async with ScriptedModel(script, **kwargs) as model:
        client = openai.AsyncOpenAI(base_url=model.base_url, api_key="test", max_retries=max_retries)
        try:
            yield model, client
        finally:
            await client.close()


async def stream(client: openai.AsyncOpenAI, **kwargs) -> list:
    kwargs.setdefault("messages", MESSAGES)
    response = await client.chat.completions.create(model="any", stream=True, **kwargs)
    return [chunk async for chunk in response]


def contents(chunks: list) -> list[str]:
    return [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]


@pytest.mark.anyio
async def test_text_streams_in_order_over_several_chunks():
    text = "The quick brown fox jumps over the lazy dog."
    async with served(Reply(text=text), Reply(text="abcdefg", chunks=3)) as (_, client):
        chunks = await stream(client)
        pieces = contents(chunks)
        assert len(pieces) >= 8 and "".join(pieces) == text
        assert chunks[0].choices[0].delta.role == "assistant"
        assert [c.choices[0].finish_reason for c in chunks] == [None] * (len(chunks) - 1) + ["stop"]
        assert {c.id for c in chunks} == {chunks[0].id} and chunks[0].id.startswith("chatcmpl-")
        assert chunks[0].object == "chat.completion.chunk" and chunks[0].model == "scripted-model"
        assert contents(await stream(client)) == ["abc", "de", "fg"]


@pytest.mark.anyio
async def test_reasoning_streams_before_text():
    async with served(Reply(text="Answer: 4", reasoning="two plus two is four")) as (_, client):
        chunks = await stream(client)
    kinds = [
        ("r", d.reasoning_content) if getattr(d, "reasoning_content", None) else ("t", d.content)
        for d in (c.choices[0].delta for c in chunks)
        if getattr(d, "reasoning_content", None) or d.content
    ]
    assert "".join(v for k, v in kinds if k == "r") == "two plus two is four"
    assert "".join(v for k, v in kinds if k == "t") == "Answer: 4"
    assert [k for k, _ in kinds] == sorted(k for k, _ in kinds)  # every "r" precedes every "t"
    assert len([k for k, _ in kinds if k == "r"]) > 1


@pytest.mark.anyio
async def test_two_tool_calls_reassemble_from_fragments():
    first = {"path": "/tmp/some/long/file/name.txt", "limit": 200, "offset": 10}
    reply = Reply(tool_calls=[ToolCall("read_file", first), ToolCall("shell", {"cmd": "ls -la /"}, id="fixed")])
    async with served(reply) as (_, client):
        chunks = await stream(client)
    calls: dict[int, dict] = {}
    fragments: dict[int, int] = {}
    for chunk in chunks:
        for tc in chunk.choices[0].delta.tool_calls or []:
            if tc.id is not None:  # the opening delta of a call
                assert tc.index not in calls and tc.type == "function" and tc.function.arguments == ""
                calls[tc.index] = {"id": tc.id, "name": tc.function.name, "args": ""}
            else:
                assert tc.function.name is None
                calls[tc.index]["args"] += tc.function.arguments
                fragments[tc.index] = fragments.get(tc.index, 0) + 1
    assert sorted(calls) == [0, 1]
    assert calls[0]["name"] == "read_file" and json.loads(calls[0]["args"]) == first
    assert calls[1] == {"id": "fixed", "name": "shell", "args": json.dumps({"cmd": "ls -la /"})}
    assert calls[0]["id"].startswith("call_")
    assert fragments[0] >= 3 and fragments[1] >= 3
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


@pytest.mark.anyio
async def test_usage_chunk_only_when_requested():
    usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    async with served(Reply(text="hello world"), Reply(text="x", usage=usage), Reply(text="y")) as (_, client):
        chunks = await stream(client, stream_options={"include_usage": True})
        assert chunks[-1].choices == [] and chunks[-2].choices[0].finish_reason == "stop"
        computed = chunks[-1].usage
        assert computed.completion_tokens == len("hello world") // 4 + 1
        assert computed.prompt_tokens == len(json.dumps(MESSAGES)) // 4
        assert computed.total_tokens == computed.prompt_tokens + computed.completion_tokens
        assert all(c.usage is None for c in chunks[:-1])
        explicit = await stream(client, stream_options={"include_usage": True})
        assert explicit[-1].usage.model_dump(exclude_none=True) == usage
        plain = await stream(client)
        assert plain[-1].choices[0].finish_reason == "stop" and all(c.usage is None for c in plain)


@pytest.mark.anyio
async def test_requests_and_headers_are_recorded():
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    async with served(Reply(text="a"), Reply(text="b")) as (model, client):
        await stream(client, messages=[{"role": "user", "content": "first"}], tools=tools)
        await client.chat.completions.create(model="m2", messages=[{"role": "user", "content": "second"}])
    assert [r["messages"][0]["content"] for r in model.requests] == ["first", "second"]
    assert model.requests[0]["tools"] == tools and model.requests[0]["stream"] is True
    assert model.requests[1]["model"] == "m2" and "stream" not in model.requests[1]
    assert len(model.headers) == 2
    assert all(h["authorization"] == "Bearer test" for h in model.headers)


@pytest.mark.anyio
async def test_faults_raise_matching_openai_errors():
    script = (Fault(500, "boom"), Fault(429, "slow down", retry_after=3), Fault(401, "bad key"))
    async with served(*script) as (_, client):
        with pytest.raises(openai.InternalServerError) as server_error:
            await stream(client)
        with pytest.raises(openai.RateLimitError) as rate_limited:
            await stream(client)
        with pytest.raises(openai.AuthenticationError):
            await client.chat.completions.create(model="m", messages=MESSAGES)
    assert server_error.value.status_code == 500 and server_error.value.message.endswith("boom")
    assert server_error.value.type == "server_error"
    assert rate_limited.value.response.headers["retry-after"] == "3"
    assert rate_limited.value.code == "rate_limit_exceeded" and "slow down" in rate_limited.value.message


@pytest.mark.anyio
async def test_client_retries_429_then_succeeds():
    async with served(Fault(429, retry_after=0), Reply(text="finally"), max_retries=2) as (model, client):
        assert "".join(contents(await stream(client))) == "finally"
    assert len(model.requests) == 2
    assert [h["x-stainless-retry-count"] for h in model.headers] == ["0", "1"]


@pytest.mark.anyio
async def test_cut_stream_raises_connection_error_after_partial_chunks():
    cut = Fault(cut_after=3, reply=Reply(text="abcdefghijkl", chunks=6))
    async with served(cut, Reply(text="after")) as (_, client):
        received = []
        response = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        with pytest.raises(openai.APIConnectionError) as error:
            async for chunk in response:
                received.append(chunk)
        # a fresh request still works: the cut only killed that one connection
        assert contents(await stream(client)) == ["afte", "r"]
    assert isinstance(error.value.__cause__, httpx2.RemoteProtocolError)
    assert len(received) == 3 and contents(received) == ["ab", "cd"]
    assert all(c.choices[0].finish_reason is None for c in received)


@pytest.mark.anyio
async def test_slow_stream_is_not_buffered():
    async with served(Reply(text="abcdefghij", chunks=5, delay=0.05)) as (_, client):
        start = time.monotonic()
        arrivals = []
        response = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        async for chunk in response:
            if chunk.choices and chunk.choices[0].delta.content:
                arrivals.append(time.monotonic() - start)
        total = time.monotonic() - start
    assert len(arrivals) == 5 and total >= 0.2
    # the last piece is sent >= 4 delays after the first, so the first must already be here
    assert arrivals[-1] - arrivals[0] >= 0.15


@pytest.mark.anyio
async def test_slow_start_delays_headers():
    async with served(Reply(text="late", first_delay=0.2)) as (_, client):
        start = time.monotonic()
        response = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        assert time.monotonic() - start >= 0.2  # create() returns once headers arrive
        assert contents([c async for c in response]) == ["late"]


@pytest.mark.anyio
async def test_responder_sees_request():
    seen = []

    def echo(request: dict) -> Reply:
        seen.append(request)
        return Reply(text="echo: " + request["messages"][-1]["content"])

    async with served(echo, default=lambda r: Fault(503, "default responder")) as (model, client):
        text = "".join(contents(await stream(client, messages=[{"role": "user", "content": "ping"}])))
        with pytest.raises(openai.InternalServerError) as error:
            await stream(client)
    assert text == "echo: ping"
    assert seen == [model.requests[0]]
    assert error.value.status_code == 503 and "default responder" in error.value.message


@pytest.mark.anyio
async def test_non_streaming_completion():
    reply = Reply(text="done", reasoning="hmm", tool_calls=[ToolCall("f", '{"broken":')], finish_reason="length")
    async with served(reply) as (_, client):
        completion = await client.chat.completions.create(model="m", messages=MESSAGES)
    choice = completion.choices[0]
    assert completion.object == "chat.completion" and choice.finish_reason == "length"
    assert choice.message.role == "assistant" and choice.message.content == "done"
    assert choice.message.reasoning_content == "hmm"
    [call] = choice.message.tool_calls
    assert call.function.name == "f" and call.function.arguments == '{"broken":' and call.id.startswith("call_")
    assert completion.usage.completion_tokens == 2


@pytest.mark.anyio
async def test_script_exhausted_is_a_clear_500():
    async with served(Reply(text="only one")) as (model, client):
        await stream(client)
        with pytest.raises(openai.InternalServerError) as error:
            await stream(client)
        model.add(Reply(text="added"))
        assert contents(await stream(client)) == ["adde", "d"]
    assert error.value.status_code == 500 and "script exhausted" in error.value.message


@pytest.mark.anyio
async def test_models_listing_and_unknown_path():
    async with served(model="my-model") as (_, client):
        models = await client.models.list()
        with pytest.raises(openai.NotFoundError):
            await client.embeddings.create(model="x", input="hi")
    assert [(m.id, m.owned_by) for m in models.data] == [("my-model", "crow")]


@pytest.mark.anyio
async def test_stop_ends_hanging_request_promptly():
    model = ScriptedModel([Fault(hang=True)]).start()
    client = openai.AsyncOpenAI(base_url=model.base_url, api_key="test", max_retries=0)
    try:
        pending = asyncio.ensure_future(stream(client))
        while not model.requests:  # noqa: ASYNC110  # the server runs in its own thread
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        assert not pending.done()
        start = time.monotonic()
        model.stop()
        assert time.monotonic() - start < 1.0
        with pytest.raises(openai.APIConnectionError):
            await asyncio.wait_for(pending, 2)
    finally:
        await client.close()


def test_keep_alive_serves_several_requests_on_one_connection():
    body = json.dumps({"model": "m", "messages": MESSAGES, "stream": True}).encode()
    request = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    closing = request.replace(b"Host: x\r\n", b"Host: x\r\nConnection: close\r\n")
    with ScriptedModel(default=Reply(text="hey")) as model:
        port = int(model.base_url.rsplit(":", 1)[1].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(request + closing)
            data = b""
            while chunk := sock.recv(65536):  # ends only if the server honours Connection: close
                data += chunk
    assert data.count(b"HTTP/1.1 200 OK") == 2 and data.count(b"data: [DONE]") == 2
    assert data.count(b"\r\n0\r\n\r\n") == 2 and b"Transfer-Encoding: chunked" in data
    assert len(model.requests) == 2
