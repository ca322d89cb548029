"""`crow run` is one process: the agent is hosted in it over an in-memory ACP pair that is crow's wire.

The first test is about a process tree, so it execs crow run for real (no fork server). The others
drive the in-memory pipes directly: what an editor's bytes go through on stdio runs on both ends.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.helpers import crow_env

from crow_acp.acp.rpc.wire import MAX_MESSAGE, READ_PIECE
from crow_acp.server.memory import MemoryPipe, MemoryTransport
from crow_acp.testing import Reply, ScriptedModel


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""  # it ended meanwhile


def test_crow_run_starts_no_child_process_and_a_sigterm_stops_the_turn(crow_home, tmp_path):
    with ScriptedModel([Reply(text="streaming and then holding", chunks=6, hold_after=3)]) as model:
        run = subprocess.Popen(
            [sys.executable, "-m", "crow", "run", "go", "--cwd", str(tmp_path)],
            env=crow_env(crow_home, model.base_url),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            assert run.stdout is not None
            first = run.stdout.read(4)  # the answer is streaming: the turn is under way, and it holds there
            assert first == b"stre"
            python_children = [command_line(pid) for pid in children(run.pid)]
            assert not [line for line in python_children if "crow" in line or "python" in line], python_children
            run.send_signal(signal.SIGTERM)
            _, err = run.communicate(timeout=60)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
    assert run.returncode == -signal.SIGTERM, err
    assert b"Traceback" not in err and b"crow: interrupted" in err
    assert len(model.requests) == 1


async def _pair() -> tuple[MemoryTransport, MemoryPipe, asyncio.StreamReader]:
    """One end of the wire, the pipe that writes to it raw, and the reader of what it sends back."""
    inbound, outbound = asyncio.StreamReader(limit=READ_PIECE), asyncio.StreamReader(limit=READ_PIECE)
    into, back = MemoryPipe(inbound), MemoryPipe(outbound)
    return MemoryTransport(into, inbound, back, MAX_MESSAGE), into, outbound


@pytest.mark.anyio
async def test_each_end_reads_its_bytes_through_crows_wire():
    end, raw, answers = await _pair()
    raw.write(b'not json\n[1]\n{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"t":"\\ud800x"}}\n')
    message = await end.receive()
    assert message == {"jsonrpc": "2.0", "id": 7, "method": "session/prompt", "params": {"t": "\ufffdx"}}
    errors = [json.loads(await answers.readline()) for _ in range(2)]
    assert [e["error"]["code"] for e in errors] == [-32700, -32600]
    assert end.open_requests == {7: ("session/prompt", {"t": "\ufffdx"})}

    raw.write(b'{"id": 8, "method": "x", "params": "' + b"a" * (MAX_MESSAGE + 10) + b'"}\n')
    raw.close()
    assert await end.receive() is None  # the oversized line was answered, not delivered; then EOF
    assert json.loads(await answers.readline())["error"] == {
        "code": -32600,
        "message": f"Invalid Request: a message may have at most {MAX_MESSAGE} bytes",
    }


@pytest.mark.anyio
async def test_what_an_end_sends_is_encoded_by_the_wire_and_waits_for_its_reader():
    end, _, answers = await _pair()
    await end.send({"jsonrpc": "2.0", "method": "session/update", "params": {"text": "\ud800 ok"}})
    assert json.loads(await answers.readline())["params"] == {"text": "\ufffd ok"}

    big = {"jsonrpc": "2.0", "method": "session/update", "params": {"text": "x" * (3 * READ_PIECE)}}
    sending = asyncio.ensure_future(end.send(big))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not sending.done(), "a writer waits while its reader is behind, as on a pipe"
    line = await _read_line(answers)
    assert len(line) > 3 * READ_PIECE
    await sending


@pytest.mark.anyio
async def test_after_its_reader_closed_a_waiting_writer_goes_on_and_its_bytes_are_dropped():
    reader = asyncio.StreamReader(limit=READ_PIECE)
    pipe = MemoryPipe(reader)
    writer = asyncio.StreamWriter(pipe, pipe.protocol, None, asyncio.get_running_loop())
    writer.write(b"x" * (3 * READ_PIECE))
    draining = asyncio.ensure_future(writer.drain())
    for _ in range(20):
        await asyncio.sleep(0)
    assert not draining.done()
    pipe.stop_reading()
    await draining
    writer.write(b"dropped\n")
    writer.close()
    assert await reader.read() == b"x" * (3 * READ_PIECE)


@pytest.mark.anyio
async def test_closing_an_end_closes_both_of_its_pipes():
    end, raw, answers = await _pair()
    await end.close()
    assert await answers.read() == b""  # the peer reads EOF
    raw.write(b'{"jsonrpc":"2.0","method":"x"}\n')  # and may still write: it is dropped, not an error


async def _read_line(reader: asyncio.StreamReader) -> bytes:
    parts = []
    while True:
        try:
            parts.append(await reader.readuntil(b"\n"))
            return b"".join(parts)
        except asyncio.LimitOverrunError as exc:
            parts.append(await reader.readexactly(exc.consumed))
