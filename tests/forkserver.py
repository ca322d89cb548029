"""A fork server for `python -m crow ARGS` in the tests (see tests/README.md; the client is tests/spawn.py).

Every `crow acp` the tests start would spend ~1.5 CPU-seconds importing acp, mcp, openai and crow. This
process imports them once, then forks a child per request. The child takes the stdin, stdout and
stderr fds the test sent (SCM_RIGHTS), its environment, cwd and argv, and runs `crow` exactly as
`python -m crow` does (runpy). The test gets the real pid and a pidfd to signal it; the child's wait
status comes back on the request's own socket.

It stays single-threaded with no event loop, so fork() is safe. It exits when the test process
closes the control socket, killing any child still running.
"""

from __future__ import annotations

import array
import gc
import importlib
import json
import os
import pkgutil
import selectors
import signal
import socket
import sys
import tempfile
import threading
from dataclasses import dataclass, field

# What `crow acp` imports while it serves (the libraries come with them). Not crow.run: it pulls in
# rich, which a test checks `crow acp` never imports; not crow_acp.testing or crow_acp.web either.
PACKAGES = ("crow_acp", "crow_skills", "crow_compact", "crow_prompt")
SKIP = ("crow_acp.testing", "crow_acp.web")
MODULES = ("crow.cli", "crow.agent_loader", "crow.presets", "crow.serve_cmd", "mcp.client.stdio",
           "mcp.client.streamable_http", "mcp.client.sse", "openai", "sqlite3")  # fmt: skip
MAX_FDS = 4  # stdin, stdout, stderr, the request's reply socket


def warm() -> None:
    for name in MODULES:
        importlib.import_module(name)
    for package in PACKAGES:
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, f"{package}."):
            if not info.name.startswith(SKIP):
                importlib.import_module(info.name)
    gc.collect()
    gc.freeze()  # the children share these pages: a GC pass in them must not copy them


@dataclass
class Server:
    control: socket.socket
    selector: selectors.BaseSelector = field(default_factory=selectors.DefaultSelector)
    children: dict[int, tuple[int, socket.socket]] = field(default_factory=dict)  # pidfd -> (pid, reply)

    def run(self) -> dict | None:
        """Serve requests; returns the request in a forked child, None in the server when it is told to stop."""
        self.selector.register(self.control, selectors.EVENT_READ)
        while True:
            for key, _ in self.selector.select():
                if key.fileobj is self.control:
                    message, fds = receive(self.control)
                    if not message:
                        self.stop()
                        return None
                    if (request := self.fork(json.loads(message), fds)) is not None:
                        return request
                else:
                    self.reap(key.fd)

    def fork(self, request: dict, fds: list[int]) -> dict | None:
        stdin, stdout, stderr, reply_fd = fds  # the client always sends these four
        reply = socket.socket(fileno=reply_fd)
        assert threading.active_count() == 1, "fork needs a single-threaded server"
        pid = os.fork()
        if pid == 0:
            self.close_all()
            reply.close()
            for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
                os.dup2(fd, target)
            for fd in {stdin, stdout, stderr} - {0, 1, 2}:
                os.close(fd)
            return request
        for fd in (stdin, stdout, stderr):
            os.close(fd)
        pidfd = os.pidfd_open(pid)
        reply.sendmsg(
            [json.dumps({"pid": pid}).encode()], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [pidfd]))]
        )
        self.children[pidfd] = (pid, reply)
        self.selector.register(pidfd, selectors.EVENT_READ)
        return None

    def reap(self, pidfd: int) -> None:
        pid, reply = self.children.pop(pidfd)
        self.selector.unregister(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        try:
            reply.send(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}).encode())
        except OSError:
            pass  # the test is gone: nobody waits for this status
        reply.close()

    def close_all(self) -> None:
        """In a child: drop every fd the server holds (an exec'd crow would not have them)."""
        self.selector.close()
        self.control.close()
        for pidfd, (_, reply) in self.children.items():
            os.close(pidfd)
            reply.close()

    def stop(self) -> None:
        for pidfd in list(self.children):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            self.reap(pidfd)


def receive(sock: socket.socket) -> tuple[bytes, list[int]]:
    fds = array.array("i")
    message, ancillary, _, _ = sock.recvmsg(1 << 20, socket.CMSG_SPACE(MAX_FDS * fds.itemsize))
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    return message, list(fds)


def become(request: dict) -> None:
    """In the child: take the request's environment, cwd and argv, then run crow as `python -m crow` does."""
    import runpy

    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None  # computed again from this environment's TMPDIR
    sys.path[0] = os.getcwd()  # what `python -m` puts first
    sys.argv = ["-m", *request["args"]]  # runpy replaces argv[0] with crow/__main__.py
    runpy.run_module("crow", run_name="__main__", alter_sys=True)


def main() -> None:
    warm()
    server = Server(socket.socket(fileno=int(sys.argv[1])))
    request = server.run()
    if request is not None:
        del server
        become(request)


if __name__ == "__main__":
    main()
