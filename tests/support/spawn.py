"""Start `python -m crow ARGS` for a test: forked by tests/support/forkserver.py, or exec'd for real.

A forked crow skips ~1.5 CPU-seconds of imports and is still a real process: its own pid (signals
reach it), stdin/stdout pipes speaking ACP, stderr shared with the test, an exit status. `start()`
returns an object with the part of asyncio.subprocess.Process the tests use. CROW_TEST_EXEC=1 (or
exec_=True, or PYTHON* variables the fork server does not have) exec's `python -m crow` instead.
"""

from __future__ import annotations

import array
import asyncio
import atexit
import contextlib
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from support.forkserver import interpreter_env, receive
from support.launch import ignored_signals

FORKSERVER = Path(__file__).resolve().parent / "forkserver.py"
LAUNCHER = Path(__file__).resolve().parent / "launch.py"
EXEC_ALL = os.environ.get("CROW_TEST_EXEC") == "1"


async def start(
    args: list[str],
    env: Mapping[str, str],
    cwd: str | Path | None = None,
    *,
    limit: int = 2**16,
    exec_: bool = False,
    wrapper: tuple[str, ...] = (),
) -> Any:
    """`python -m crow ARGS` with stdin and stdout piped to the test, stderr inherited; a wrapper
    command (prlimit, setpriv, ...) execs it."""
    env = dict(env)
    server = None if exec_ or wrapper or EXEC_ALL else _server(env)
    if server is None:
        return await asyncio.create_subprocess_exec(
            *wrapper, sys.executable, "-m", "crow", *args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
            cwd=None if cwd is None else str(cwd), limit=limit,
        )  # fmt: skip
    return await ForkedProcess.fork(server, args, env, _absolute(cwd), limit)


async def close(proc: Any, timeout: float = 2.0) -> None:
    """End crow as the ACP SDK's spawn_agent_process does: close stdin, then SIGTERM, then SIGKILL."""
    with contextlib.suppress(Exception):  # it may be gone already
        proc.stdin.close()
        await proc.stdin.wait_closed()
    for stop in (None, proc.terminate, proc.kill):
        if stop is not None:
            stop()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), timeout)
            return


class ForkedProcess:
    """A forked crow, seen as asyncio.subprocess.Process: pid, returncode, stdin, stdout, wait(), signals."""

    stderr = None

    def __init__(self, pid: int, pidfd: int, reply: socket.socket, stdin: asyncio.StreamWriter,
                 stdout: asyncio.StreamReader) -> None:  # fmt: skip
        self.pid, self.stdin, self.stdout = pid, stdin, stdout
        self._pidfd, self._reply = pidfd, reply
        self._returncode: int | None = None
        self._loop = asyncio.get_running_loop()
        self._exited = self._loop.create_future()
        self._loop.add_reader(reply, self._poll)

    @classmethod
    async def fork(cls, server: str, args: list[str], env: dict, cwd: str, limit: int) -> ForkedProcess:
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        reply = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        reply.setblocking(False)
        # The signals this process ignores stay ignored in a process it execs, so in the fork too.
        request = json.dumps({"args": ["-m", "crow", *args], "env": env, "cwd": cwd, "ignored": ignored_signals()})
        try:
            await asyncio.get_running_loop().sock_connect(reply, server)
            fds = array.array("i", [stdin_r, stdout_w, 2])
            reply.sendmsg([request.encode()], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
        finally:
            os.close(stdin_r), os.close(stdout_w)
        message, fds = await _receive(reply)
        if not message or "pid" not in json.loads(message):
            raise RuntimeError("the fork server did not fork; run with CROW_TEST_EXEC=1 to see crow start for real")
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=limit)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(stdout_r, "rb", 0))
        transport, protocol = await loop.connect_write_pipe(_PipeWriter, os.fdopen(stdin_w, "wb", 0))
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        return cls(json.loads(message)["pid"], fds[0], reply, writer, reader)

    @property
    def returncode(self) -> int | None:
        if self._returncode is None:
            self._poll()
        return self._returncode

    async def wait(self) -> int:
        await asyncio.shield(self._exited)
        assert self._returncode is not None
        return self._returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):  # it exited; the status is on its way
                signal.pidfd_send_signal(self._pidfd, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _poll(self) -> None:
        """Take the exit status if the fork server sent it (never blocks)."""
        if self._reply.fileno() < 0:
            return
        try:
            message = self._reply.recv(4096, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        with contextlib.suppress(RuntimeError):  # the test's loop is closed: nothing to unregister
            self._loop.remove_reader(self._reply)
        self._reply.close()
        os.close(self._pidfd)
        if not message:
            self._exited.set_exception(RuntimeError(f"the fork server exited before crow {self.pid} did"))
            return
        self._returncode = json.loads(message)["returncode"]
        if not self._exited.done():
            self._exited.set_result(self._returncode)


class _PipeWriter(asyncio.streams.FlowControlMixin):
    """The write side of the stdin pipe, closable and awaitable like a subprocess's stdin."""

    def __init__(self) -> None:
        super().__init__()
        self._closed = asyncio.get_running_loop().create_future()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if not self._closed.done():
            self._closed.set_result(None)

    def _get_close_waiter(self, stream: Any) -> asyncio.Future:
        return self._closed


async def _receive(sock: socket.socket) -> tuple[bytes, list[int]]:
    loop = asyncio.get_running_loop()
    ready = loop.create_future()
    loop.add_reader(sock, lambda: ready.done() or ready.set_result(None))
    try:
        await ready
    finally:
        loop.remove_reader(sock)
    return receive(sock)


_control: socket.socket | None = None
_process: subprocess.Popen | None = None
_socket_dir: tempfile.TemporaryDirectory | None = None
_server_python_env: dict[str, str] = {}


def _server(env: Mapping[str, str]) -> str | None:
    """The socket path of this process's fork server (started on first use); None when crow must exec."""
    _ensure_server()
    return _in_socket_dir("server") if interpreter_env(dict(env)) == _server_python_env else None


def python() -> str:
    """What to run instead of sys.executable for `-m crow ...` or an MCP server script: a process forked
    by the fork server when it can give one (launch.py), an exec'd interpreter otherwise."""
    if EXEC_ALL:
        return sys.executable
    _ensure_server()
    return _in_socket_dir("python")


def _ensure_server() -> None:
    global _control, _process, _socket_dir, _server_python_env
    if _process is not None and _process.poll() is not None:
        stop()  # it died (the test that saw it die failed): the next tests get a new one
    if _control is None:
        _socket_dir = tempfile.TemporaryDirectory(prefix="crow-fork-")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        listener.bind(_in_socket_dir("server"))  # bound here: a request made before the server is up waits in its queue
        listener.listen(64)
        server_env = {k: v for k, v in os.environ.items() if not k.startswith(("CROW_", "OPENAI_"))}
        fds = [theirs.fileno(), listener.fileno()]
        command = [sys.executable, str(FORKSERVER), *map(str, fds), _in_socket_dir("python")]
        _process = subprocess.Popen(command, pass_fds=fds, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    env=server_env)  # fmt: skip
        theirs.close()
        listener.close()
        _control, _server_python_env = ours, interpreter_env(server_env)
        shim = Path(_in_socket_dir("python"))
        shim.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -I -S {shlex.quote(str(LAUNCHER))} "
                        f"{shlex.quote(_in_socket_dir('server'))} \"$@\"\n")  # fmt: skip
        shim.chmod(0o755)


def socket_path() -> str:
    """Where this process's fork server takes requests (started on first use)."""
    _ensure_server()
    return _in_socket_dir("server")


def _in_socket_dir(name: str) -> str:
    """The server's socket ("server") and the launcher script ("python") live in one private directory."""
    assert _socket_dir is not None
    return os.path.join(_socket_dir.name, name)


def stop() -> None:
    """Close the control socket (the server kills what still runs and exits) and reap the server, so
    that its CPU time and its children's count in this process's (time -v, getrusage)."""
    global _control, _process, _socket_dir
    if _control is not None and _process is not None:
        _control.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            _process.wait(timeout=10)
    if _socket_dir is not None:
        _socket_dir.cleanup()
    _control = _process = _socket_dir = None


atexit.register(stop)


def _absolute(cwd: str | Path | None) -> str:
    return os.path.abspath(cwd if cwd is not None else os.getcwd())
