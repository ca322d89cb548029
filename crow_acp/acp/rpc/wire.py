"""The stdio wire: newline-delimited JSON-RPC that survives any line an editor (or an attacker) sends.

The SDK's own reader buffers a line of any size, and any JSON value other than an object, an
unhashable id or an `error` that is not an object kills its receive loop: crow would never answer
again. This transport (the SDK's `Transport` seam: messages in, messages out) reads a line in
bounded pieces, drops the rest of an oversized one unbuffered, and answers what cannot be a
request: -32700 for text that is not JSON, -32600 for JSON that is not a request. Invalid UTF-8
is replaced, and lone surrogates from `\\ud800` escapes are repaired before anything sees them.

It also knows which requests are still unanswered, so that shutdown can answer every one.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
from typing import Any

from ...errors import WireError
from ...util.secrets import dumps
from ...util.text import clean_value, cleaned_copy

log = logging.getLogger(__name__)

MAX_MESSAGE = 32 * 1024 * 1024
"""Bytes one JSON-RPC line may have (a prompt with a few large images fits)."""
READ_PIECE = 1024 * 1024
"""The reader's buffer: a longer line is read in pieces of about this size."""
MAX_DEPTH = 128
"""Nesting one message may have; ACP needs under ten, deeper only costs recursion everywhere."""
ID_PREFIX = 64 * 1024
"""How much of an oversized line is searched for its id, so that its error reaches its sender."""

PARSE_ERROR, INVALID_REQUEST = -32700, -32600
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|["{}\[\]:,]')


class StdioTransport:
    """acp's Transport over stdin/stdout, hardened; `open_requests` are the ids not yet answered."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, max_message: int = MAX_MESSAGE
    ) -> None:
        self._reader, self._writer, self._max = reader, writer, max_message
        self._write_lock = asyncio.Lock()
        self.open_requests: dict[Any, tuple[str, Any]] = {}
        """id -> (method, params) of every request received and not yet answered."""
        self.answered = asyncio.Event()
        """Set whenever the last open request was answered."""
        self.gone = asyncio.Event()
        """Set when stdout broke: nobody is left to answer."""
        self._closed = False

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._read_line()
            if line is None:
                return None
            data, oversized = line
            try:
                message = parse(data, oversized)
            except WireError as exc:
                if await self._refused(exc, len(data)):
                    continue
                return None
            if message is None:
                continue  # a blank line, or a response too broken to route: nothing to answer
            if "method" in message and "id" in message:
                self.open_requests[message["id"]] = (message["method"], message.get("params"))
                self.answered.clear()
            return message

    async def _refused(self, exc: WireError, size: int) -> bool:
        """A line that is no JSON-RPC message: answered with the error, and reading goes on (False: it ends)."""
        log.warning("bad JSON-RPC line (%d bytes): %s", size, exc.message)
        await self.send(error_response(exc.request_id, exc.code, exc.message))
        return True

    async def send(self, message: dict[str, Any]) -> None:
        if "method" not in message and message.get("id") in self.open_requests:
            del self.open_requests[message["id"]]
            if not self.open_requests:
                self.answered.set()
        if self._closed or self.gone.is_set():
            log.debug("dropped a message after the wire closed: %.200r", message)
            return
        data = encode(message)
        async with self._write_lock:
            try:
                self._writer.write(data)
                await self._writer.drain()
            except (ConnectionError, OSError) as exc:  # the editor closed our stdout: it is gone
                log.warning("the editor stopped reading: %s", exc)
                self.gone.set()
                raise ConnectionError("the editor closed the connection") from exc

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._writer.close()
        except OSError:
            pass  # already broken: nothing left to flush

    async def answer_open(self, code: int, text: str) -> int:
        """Answer every request still open with an error; returns how many there were."""
        ids = list(self.open_requests)
        for request_id in ids:
            try:
                await self.send(error_response(request_id, code, text))
            except ConnectionError:
                break
        self.open_requests.clear()
        self.answered.set()
        return len(ids)

    async def _read_line(self) -> tuple[bytes, bool] | None:
        """The next line (without its newline) and whether it was cut at the size limit; None at EOF.

        Past the limit, pieces are read and dropped: an endless line costs READ_PIECE, not its size.
        """
        parts: list[bytes] = []
        size, oversized = 0, False
        while True:
            try:
                piece, done = await self._reader.readuntil(b"\n"), True
            except asyncio.LimitOverrunError as exc:
                piece, done = await self._reader.readexactly(max(exc.consumed, 1)), False
            except asyncio.IncompleteReadError as exc:  # EOF; a last line without a newline still counts
                piece, done = exc.partial, True
                if not piece and not parts:
                    return None
            size += len(piece)
            if size <= self._max:
                parts.append(piece)
            elif not oversized:  # keep only the start, to find the id in: the rest is dropped as it comes
                oversized, parts = True, [_prefix([*parts, piece])]
            if done:
                return b"".join(parts).rstrip(b"\r\n"), oversized


def _prefix(parts: list[bytes]) -> bytes:
    head = bytearray()
    for part in parts:
        head += part[: ID_PREFIX - len(head)]
        if len(head) >= ID_PREFIX:
            break
    return bytes(head)


def parse(data: bytes, oversized: bool = False) -> dict[str, Any] | None:
    """One line as a JSON-RPC message, or None for nothing to do; WireError says what to answer."""
    if oversized:
        raise WireError(
            INVALID_REQUEST, f"Invalid Request: a message may have at most {MAX_MESSAGE} bytes", top_level_id(data)
        )
    if not data.strip():
        return None
    text = data.decode("utf-8", "replace")  # invalid UTF-8 becomes U+FFFD, as everywhere else in crow
    try:
        message = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise WireError(INVALID_REQUEST, f"Invalid Request: nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise WireError(PARSE_ERROR, f"Parse error: {exc}") from None
    if data.count(b"[") + data.count(b"{") > MAX_DEPTH and _depth(message) > MAX_DEPTH:
        raise WireError(INVALID_REQUEST, f"Invalid Request: nested deeper than {MAX_DEPTH} levels", _id_of(message))
    if SURROGATE_ESCAPE.search(data):
        clean_value(message)
    return check_shape(message)


def check_shape(message: Any) -> dict[str, Any] | None:
    """The message if the SDK can route it; None for a response too broken to route."""
    if not isinstance(message, dict):
        raise WireError(INVALID_REQUEST, f"Invalid Request: expected a JSON object, got {type(message).__name__}")
    request_id = message.get("id")
    valid_id = _valid_id(request_id)
    if "method" in message:
        if not valid_id:
            raise WireError(INVALID_REQUEST, "Invalid Request: id must be a string, a number or null")
        if not isinstance(message["method"], str):
            raise WireError(INVALID_REQUEST, "Invalid Request: method must be a string", request_id)
        return message
    if "id" in message and ("result" in message or "error" in message):
        if not valid_id or request_id is None:
            log.warning("dropped a response with an unusable id: %.200r", message)
            return None
        if "error" in message and not isinstance(message["error"], dict):
            message["error"] = {"code": -32603, "message": f"malformed error: {message['error']!r:.200}"}
        return message
    raise WireError(
        INVALID_REQUEST,
        "Invalid Request: neither a request, a notification nor a response",
        request_id if valid_id else None,
    )


def error_response(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def encode(message: dict[str, Any]) -> bytes:
    """One line of UTF-8 JSON without crow's model keys; anything that would not encode is repaired, never
    sent broken."""
    try:
        text = dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        log.warning("repaired invalid Unicode in an outgoing message")
        return encode(cleaned_copy(message))


def top_level_id(prefix: bytes) -> Any:
    """The id of a JSON-RPC object from the first bytes of its text, when it appears there; else None.

    Only a key of the outermost object counts, never an "id" inside params.
    """
    depth, previous = 0, b""
    for match in TOKEN.finditer(prefix[:ID_PREFIX]):
        token = match.group()
        if token == b'"':
            return None  # a string cut off at the end of the prefix: what follows is unknown
        if token in (b"{", b"["):
            depth += 1
        elif token in (b"}", b"]"):
            depth -= 1
        elif token == b":" and depth == 1 and previous == b'"id"':
            return _value_after(prefix, match.end())
        previous = token
    return None


def _value_after(prefix: bytes, start: int) -> Any:
    try:
        value, _ = json.JSONDecoder().raw_decode(prefix[start : start + 256].decode("utf-8", "replace").lstrip())
    except ValueError:
        return None
    return value if _valid_id(value) else None


def _valid_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, (int, float)) and not isinstance(value, bool))


def _id_of(message: Any) -> Any:
    value = message.get("id") if isinstance(message, dict) else None
    return value if _valid_id(value) else None


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, (dict, list)):
            deepest = max(deepest, level)
            if deepest > MAX_DEPTH:
                return deepest
            stack.extend((child, level + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range")
    return value
