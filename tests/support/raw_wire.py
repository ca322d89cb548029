"""A raw JSON-RPC peer for `crow acp`: sends any bytes, reads every line crow writes.

The SDK's client cannot send hostile input, so the wire, Unicode and shutdown tests speak the
protocol by hand. Every line crow writes must be valid UTF-8 JSON: `lines()` asserts that.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from support import spawn

INITIALIZE = {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}


class RawCrow:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.received: list[dict[str, Any]] = []
        self._next_id = 1000
        self._reading = anyio.Lock()  # several tasks may wait at once (prompts in several sessions): one reads
        self.permission: Any = lambda params: {"outcome": "selected", "optionId": "allow_once"}
        """The outcome it answers a session/request_permission's params with (by default: allow_once)."""

    @property
    def updates(self) -> list[dict[str, Any]]:
        return [m["params"]["update"] for m in self.received if m.get("method") == "session/update"]

    def unaddressed(self) -> list[int]:
        """Error codes of replies crow sent with a null id (to lines that were no request)."""
        return [m["error"]["code"] for m in self.received if "method" not in m and m.get("id") is None]

    async def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def send(self, method: str, params: Any, request_id: Any = None) -> Any:
        """Send a request; returns its id."""
        if request_id is None:
            request_id, self._next_id = self._next_id, self._next_id + 1
        await self.write(
            json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode() + b"\n"
        )
        return request_id

    async def notify(self, method: str, params: Any) -> None:
        await self.write(json.dumps({"jsonrpc": "2.0", "method": method, "params": params}).encode() + b"\n")

    async def read_one(self) -> dict[str, Any] | None:
        assert self.proc.stdout is not None
        line = await self.proc.stdout.readline()
        if not line:
            return None
        line.decode("utf-8")  # strict: crow never writes invalid UTF-8
        message = json.loads(line)
        self.received.append(message)
        if message.get("method") == "session/request_permission":  # the raw peer allows, unless told otherwise
            outcome = self.permission(message["params"])
            await self.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {
                "outcome": outcome}}).encode() + b"\n")  # fmt: skip
        return message

    async def _read_more(self, seen: int, closed: str) -> None:
        """Read one more message, unless another task's read added some since this one looked at `seen`."""
        async with self._reading:
            if len(self.received) == seen and await self.read_one() is None:
                raise AssertionError(closed)

    async def answer(self, request_id: Any, timeout: float = 60) -> dict[str, Any]:
        """Read until the response to request_id arrives."""
        with anyio.fail_after(timeout):
            while True:
                seen = len(self.received)
                for message in self.received:
                    if "method" not in message and message.get("id") == request_id:
                        return message
                await self._read_more(seen, f"crow closed stdout before answering {request_id!r}")

    async def call(self, method: str, params: Any, timeout: float = 60) -> dict[str, Any]:
        return await self.answer(await self.send(method, params), timeout)

    async def wait_for(self, predicate: Any, timeout: float = 60) -> None:
        with anyio.fail_after(timeout):
            while not predicate(self):
                await self._read_more(len(self.received), "crow closed stdout")

    async def new_session(self, cwd: str) -> str:
        reply = await self.call("session/new", {"cwd": cwd, "mcpServers": []})
        return reply["result"]["sessionId"]

    async def prompt(self, session_id: str, text: str, timeout: float = 60) -> dict[str, Any]:
        prompt = [{"type": "text", "text": text}]
        return await self.call("session/prompt", {"sessionId": session_id, "prompt": prompt}, timeout)

    async def drain_to_exit(self, timeout: float = 30) -> int:
        """Read everything crow still writes, then its exit status."""
        with anyio.fail_after(timeout):
            while await self.read_one() is not None:
                pass
            return await self.proc.wait()

    def signal(self, sig: signal.Signals) -> None:
        os.kill(self.proc.pid, sig)


def descendants(pid: int) -> set[int]:
    """Every live process below pid (children, grandchildren, ...), from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))):
            parents[int(entry.name)] = int(stat[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return {p for p in found if alive(p)}


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()  # after "pid (name) ": state, parent pid, ...


def alive(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z"  # a zombie has exited; only its parent's wait is missing


async def eventually(predicate: Any, timeout: float = 15) -> None:
    """Poll until predicate() holds: other processes' exits and files give no event to wait on."""
    with anyio.fail_after(timeout):
        while not predicate():  # noqa: ASYNC110 (nothing in this process can signal it)
            await anyio.sleep(0.05)


@asynccontextmanager
async def raw_crow(
    env: dict[str, str],
    *args: str,
    cwd: str | Path | None = None,
    capabilities: dict[str, Any] | None = None,
    initialize: dict[str, Any] | None = None,
) -> AsyncIterator[RawCrow]:
    """`python -m crow acp ARGS` (forked, see spawn.py), initialized (with `capabilities` as the client's, or
    the whole `initialize` params when given); killed at the end if it is still running."""
    proc = await spawn.start(["acp", *args], env, cwd, limit=2**26)
    crow = RawCrow(proc)
    try:
        reply = await crow.call("initialize", initialize or {**INITIALIZE, "clientCapabilities": capabilities or {}})
        assert reply["result"]["protocolVersion"] == 1
        yield crow
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
