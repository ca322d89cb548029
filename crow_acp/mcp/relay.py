"""What a stdio MCP server writes, made safe for the MCP SDK before it reaches crow.

The guard (mcp_guard.py) relays the server's stdout through this, line by line, because the SDK's
reader trusts it: one line it cannot parse is dropped, and a call waiting for that line waits out
`timeouts.mcp_call`; one endless line grows without bound in crow's memory. Here, per line:

- a lone surrogate escape (`"\\ud800"`, which the SDK's JSON parser rejects) becomes `\\ufffd`;
  a valid pair (`"\\ud83d\\ude00"`) stays;
- a control character JSON forbids (NUL and the like, never valid outside a string either)
  becomes its `\\u00XX` escape;
- bytes that are not UTF-8 become U+FFFD;
- a line longer than MAX_LINE is dropped as it streams in (memory stays bounded): if it was an
  answer whose id can be found at its start or end, an error answer for that id takes its place,
  so the call fails at once with a clear message.

Only the standard library: the guard runs with `python -I -S`, outside crow's environment.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

MAX_LINE = 16 * 1024 * 1024
"""Bytes in one message from a server. The SDK joins a line's pieces over and over (quadratic in
its length) on crow's event loop, so this stays well under the ACP wire's 32 MiB."""
KEEP = 64 * 1024
"""Bytes kept of each end of a dropped line, to find its id."""

_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_ESCAPE = re.compile(
    rb"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|u[dD][89a-fA-F][0-9a-fA-F]{2}|.)", re.S
)
_HIGH_END = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}$")
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_ID = rb'(-?\d{1,30}|"(?:[^"\\]|\\.){0,200}")'
_ANSWER_HEAD = re.compile(
    rb'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?(?:"id"\s*:\s*' + _ID + rb'\s*,\s*)?"(?:result|error)"\s*:'
)
_ID_TAIL = re.compile(rb'"id"\s*:\s*' + _ID + rb'\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$')


def repair_line(line: bytes) -> bytes:
    """One line as valid UTF-8 JSON text as far as bytes can make it; unchanged when nothing is wrong."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        line = line.decode("utf-8", "replace").encode("utf-8")
    if _CONTROL.search(line):
        line = _CONTROL.sub(lambda m: b"\\u%04x" % m.group()[0], line)
    return repair_escapes(line)


def repair_escapes(data: bytes) -> bytes:
    """JSON text with each lone surrogate escape replaced by `\\ufffd` (valid pairs stay).

    `data` must start outside an escape; it may end anywhere (see StreamRepair)."""
    return _ESCAPE.sub(_lone_to_replacement, data) if _SURROGATE.search(data) else data


class StreamRepair:
    """repair_escapes over a byte stream cut anywhere: an escape (or pair) cut in two waits for its rest."""

    def __init__(self) -> None:
        self._held = b""

    def feed(self, chunk: bytes) -> bytes:
        data, self._held = self._held + chunk, b""
        if (first := data.find(b"\\", max(0, len(data) - 12))) >= 0:
            if _HIGH_END.search(data, 0, first):  # the first half of a pair whose second half is held
                first -= 6
            while first > 0 and data[first - 1] == 0x5C:  # back to the start of its run of backslashes,
                first -= 1  # which is never inside an escape
            data, self._held = data[:first], data[first:]
        return repair_escapes(data)

    def flush(self) -> bytes:
        held, self._held = self._held, b""
        return repair_escapes(held)


def _lone_to_replacement(match: re.Match[bytes]) -> bytes:
    # Escapes are matched left to right, so `\\\\ud800` (an escaped backslash, then text) is no escape.
    escape = match.group()
    return b"\\ufffd" if len(escape) == 6 and escape[1:3].lower() == b"ud" else escape


def answer_id(head: bytes, tail: bytes) -> bytes | None:
    """The JSON id of an answer (not a request) from the first and last bytes of its line, if there."""
    if not (answer := _ANSWER_HEAD.match(head)):
        return None  # a request or notification from the server, or garbage
    return answer.group(1) or ((match := _ID_TAIL.search(tail)) and match.group(1)) or None


def dropped_answer(head: bytes, tail: bytes, size: int) -> bytes | None:
    """The error answer that replaces an oversized line, when the line was an answer with a findable id."""
    if not (found := answer_id(head, tail)):
        return None  # dropped without a word
    message = (
        f"the MCP server's answer was {size / 1048576:.0f} MiB or more; crow accepts at most "
        f"{MAX_LINE // 1048576} MiB in one message, so it was dropped"
    )
    error = {"code": -32603, "message": message}
    return b'{"jsonrpc":"2.0","id":' + found + b',"error":' + json.dumps(error).encode() + b"}\n"


class LineRelay:
    """Splits a byte stream into lines, repairs each, and hands the result to `write`."""

    def __init__(self, write: Callable[[bytes], object], max_line: int = MAX_LINE) -> None:
        self.write = write
        self.max_line = max_line
        self._parts: list[bytes] = []
        self._size = 0
        self._head = b""
        self._tail = b""
        self.dropped = 0

    def feed(self, data: bytes) -> None:
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            self._add(data[start:end])
            self._end_line()
            start = end + 1
        if start < len(data):
            self._add(data[start:])

    def close(self) -> None:
        """The stream ended: a last line without its newline is still delivered."""
        if self._size:
            self._end_line()

    def _add(self, piece: bytes) -> None:
        self._size += len(piece)
        if self._size <= self.max_line:
            self._parts.append(piece)
            return
        if self._size - len(piece) <= self.max_line:  # this piece made it too long: keep only its two ends
            whole = b"".join(self._parts) + piece
            self._head, self._tail, self._parts = whole[:KEEP], whole[-KEEP:], []
        else:
            self._tail = (self._tail + piece)[-KEEP:]

    def _end_line(self) -> None:
        if not self._size:
            pass  # a blank line is no message: the SDK would log it as one it cannot parse
        elif self._size > self.max_line:
            self.dropped += 1
            if replacement := dropped_answer(self._head, self._tail, self._size):
                self.write(replacement)
        else:
            self.write(repair_line(b"".join(self._parts)) + b"\n")
        self._parts, self._size, self._head, self._tail = [], 0, b"", b""
