"""A scripted model server for tests and benchmarks: chat completions here; /v1/responses and /v1/messages
in responses_wire.py and anthropic_wire.py.

Only the model's intelligence is mocked, never its protocol: the HTTP/1.1 and
SSE framing follow what OpenAI, vLLM and DeepSeek send, so the real client
stack (openai -> httpx2 -> sockets) is exercised end to end.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import threading
from collections import deque
from collections.abc import Iterable

from .anthropic_wire import AnthropicState
from .anthropic_wire import serve as serve_messages
from .render import Render
from .responses_wire import ResponsesState
from .responses_wire import serve as serve_responses
from .wire import Entry, Fault, Reply, Responder, Writer, _error_body, _head, _write_chunk, is_title_request

log = logging.getLogger(__name__)


class ScriptedModel:
    """Serves scripted replies over real HTTP on 127.0.0.1 from a background thread."""

    def __init__(
        self,
        script: Iterable[Entry] = (),
        *,
        default: Reply | Responder | None = None,
        model: str = "scripted-model",
        port: int = 0,
    ) -> None:
        self.default = default
        self.api_key: str | None = None
        """When set, a request without `Authorization: Bearer <api_key>` is answered 401, as OpenAI does."""
        self.requests: list[dict] = []
        self.title_requests: list[dict] = []
        self.titles: Entry | None = None
        """The answer to crow's title side calls; None answers 400, so sessions keep the prompt's title."""
        self.headers: list[dict] = []
        self._script: deque[Entry] = deque(script)
        self._lock = threading.Lock()
        self._want_port = port
        self._port: int | None = None
        self._render = Render(model)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._conns: dict[asyncio.Task, Writer] = {}
        self._error: BaseException | None = None
        self.anthropic = AnthropicState()
        """/v1/messages: the signing key of its thinking, and its prompt cache."""
        self.responses = ResponsesState()
        """/v1/responses: the key of its encrypted reasoning, and the prefixes it has seen."""

    @property
    def model(self) -> str:
        """The model id the server reports and stamps on every completion."""
        return self._render.model

    @model.setter
    def model(self, model: str) -> None:
        self._render.model = model

    def calls(self, reply: Reply) -> list[tuple[str, str, str]]:
        """(id, name, arguments) of the reply's tool calls, ids unique on this server whatever the wire."""
        return self._render.calls(reply)

    def add(self, *entries: Entry) -> None:
        with self._lock:
            self._script.extend(entries)

    @property
    def base_url(self) -> str:
        if self._port is None:
            raise RuntimeError("ScriptedModel is not running; call start() first")
        return f"http://127.0.0.1:{self._port}/v1"

    def start(self) -> ScriptedModel:
        if self._thread is not None:
            return self
        ready = threading.Event()
        self._error = None
        self._thread = threading.Thread(target=self._run, args=(ready,), name="scripted-model", daemon=True)
        self._thread.start()
        ready.wait(10)
        if self._error is not None:
            self._thread.join(1)
            self._thread = None
            raise self._error
        return self

    def stop(self) -> None:
        thread, loop, stopping = self._thread, self._loop, self._stopping
        if thread is None:
            return
        if loop is not None and stopping is not None:
            try:
                loop.call_soon_threadsafe(stopping.set)
            except RuntimeError:  # loop already gone: the thread is finishing anyway
                pass
        thread.join(5)
        self._thread = self._loop = self._stopping = self._port = None

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> ScriptedModel:
        return self.start()  # start/stop block for milliseconds only

    async def __aexit__(self, *exc: object) -> None:
        self.stop()

    def _run(self, ready: threading.Event) -> None:
        try:
            asyncio.run(self._serve(ready))
        except BaseException as exc:  # surface bind errors to start() instead of dying silently
            self._error = exc
            if self._port is not None:  # before that, start() raises it: no second report
                log.exception("scripted model server crashed")
        finally:
            ready.set()

    async def _serve(self, ready: threading.Event) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        server = await asyncio.start_server(self._connection, "127.0.0.1", self._want_port, limit=2**20)
        self._port = server.sockets[0].getsockname()[1]
        ready.set()
        await self._stopping.wait()
        server.close()
        conns = dict(self._conns)
        for task in conns:
            task.cancel()  # hanging requests would otherwise keep the thread alive
        await asyncio.gather(*conns, return_exceptions=True)
        for writer in conns.values():
            writer.transport.abort()

    async def _connection(self, reader: asyncio.StreamReader, writer: Writer) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._conns[task] = writer
        try:
            while await self._request(reader, writer):
                pass  # keep-alive: httpx pools and reuses connections
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away; nobody is left to answer
        except asyncio.CancelledError:
            pass  # stop(); ending normally keeps 3.11's start_server callback from logging it
        except Exception:  # one test connection's failure is logged; the scripted server goes on
            log.exception("scripted model connection failed")
        finally:
            self._conns.pop(task, None)
            writer.close()

    async def _request(self, reader: asyncio.StreamReader, writer: Writer) -> bool:
        """Serve one request; return whether the connection stays open."""
        line = await reader.readline()
        if not line.strip():
            return bool(line)  # tolerate a stray CRLF between requests; b"" is EOF
        parts = line.decode("latin-1").split()
        if len(parts) != 3:
            await self._send_json(writer, 400, _error_body(400, "malformed request line"), False)
            return False
        method, target, version = parts
        headers: dict[str, str] = {}
        while (raw := await reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = raw.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length") or 0))
        keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        path = target.split("?", 1)[0].rstrip("/")
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            await self._send_json(writer, 401, _error_body(401, "Incorrect API key provided."), keep)
            return keep
        if method == "GET" and path == "/v1/models":
            listing = [{"id": self.model, "object": "model", "created": 0, "owned_by": "crow"}]
            await self._send_json(writer, 200, {"object": "list", "data": listing}, keep)
            return keep
        if method == "POST" and path == "/v1/chat/completions":
            return await self._chat(writer, body, headers, keep)
        if method == "POST" and path == "/v1/messages":
            return await serve_messages(self.anthropic, self, writer, body, headers, keep)
        if method == "POST" and path == "/v1/responses":
            return await serve_responses(self.responses, self, writer, body, headers, keep)
        await self._send_json(writer, 404, _error_body(404, f"no route for {method} {path}"), keep)
        return keep

    async def _send_json(self, writer: Writer, status: int, obj: dict, keep: bool, extra: dict | None = None) -> None:
        body = json.dumps(obj).encode()
        headers = {"Content-Type": "application/json", "Content-Length": len(body), **(extra or {})}
        writer.write(_head(status, headers, keep) + body)
        await writer.drain()

    async def _send_stream_head(self, writer: Writer, content_type: str, keep: bool) -> None:
        headers = {"Content-Type": content_type, "Cache-Control": "no-cache", "Transfer-Encoding": "chunked"}
        writer.write(_head(200, headers, keep))
        await writer.drain()

    async def _chat(self, writer: Writer, body: bytes, headers: dict, keep: bool) -> bool:
        try:
            req = json.loads(body or b"{}")
        except ValueError:
            req = None
        if not isinstance(req, dict):
            await self._send_json(writer, 400, _error_body(400, "body must be a JSON object"), keep)
            return keep
        if is_title_request(req):  # crow's side call for a session title: outside the script
            self.title_requests.append(req)
            entry = await self._answer(self.titles or Fault(400, "this scripted model writes no titles"), req)
        else:
            with self._lock:
                self.requests.append(req)
                self.headers.append(headers)
            entry = await self._next_entry(req)
        stream = bool(req.get("stream"))
        if isinstance(entry, Fault):
            return await self._fault(writer, entry, req, stream, keep)
        await asyncio.sleep(entry.first_delay)
        if stream:
            await self._stream(writer, entry, req, keep)
        else:
            await self._send_json(writer, 200, self._render.completion(entry, req), keep)
        return keep

    async def _next_entry(self, req: dict) -> Reply | Fault:
        with self._lock:
            entry = self._script.popleft() if self._script else self.default
        if entry is None:
            return Fault(500, "script exhausted")
        return await self._answer(entry, req)

    async def _answer(self, entry: Entry, req: dict) -> Reply | Fault:
        if isinstance(entry, (Reply, Fault)):
            return entry
        try:
            result = entry(req)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:  # a broken responder must fail the request, not the server
            log.exception("scripted responder raised")
            return Fault(500, f"responder raised {exc!r}")
        if not isinstance(result, (Reply, Fault)):
            return Fault(500, f"responder returned {type(result).__name__}, not Reply or Fault")
        return result

    async def _fault(self, writer: Writer, fault: Fault, req: dict, stream: bool, keep: bool) -> bool:
        if fault.hang:
            await self._send_stream_head(writer, "text/event-stream" if stream else "application/json", keep)
            await asyncio.Event().wait()  # only stop() (cancellation) ends this
        if fault.cut_after is not None:
            reply = fault.reply or Reply(text=fault.message)
            await asyncio.sleep(reply.first_delay)
            if stream:
                await self._stream(writer, reply, req, keep, cut_after=fault.cut_after)
            else:  # full Content-Length, half the body: the client sees a truncated read
                body = json.dumps(self._render.completion(reply, req)).encode()
                writer.write(_head(200, {"Content-Type": "application/json", "Content-Length": len(body)}, False))
                writer.write(body[: len(body) // 2])
                await writer.drain()
            return False  # no terminating chunk: the connection closes mid-message
        extra = {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}
        await self._send_json(writer, fault.status, _error_body(fault.status, fault.message), keep, extra)
        return keep

    async def _stream(self, writer: Writer, reply: Reply, req: dict, keep: bool, cut_after: int | None = None) -> None:
        events = self._render.stream(reply, req, cut_after)
        await self._send_stream_head(writer, "text/event-stream", keep)
        for i, event in enumerate(events):
            if i == reply.hold_after:  # a stream caught mid-way, for as long as the test needs
                await asyncio.Event().wait()  # only stop() (cancellation) ends this
            if i and reply.delay:
                await asyncio.sleep(reply.delay)
            await _write_chunk(writer, b"data: " + json.dumps(event).encode() + b"\n\n")
        if cut_after is None:
            await _write_chunk(writer, b"data: [DONE]\n\n")
            await _write_chunk(writer, b"")  # zero-length chunk ends the HTTP body
