"""The terminal belongs to the view: everything else `crow run`'s process writes is caught and kept.

The agent runs in `crow run`'s own process, and so do its logs, a user's `--agent` module with its
prints, and the MCP servers and commands it starts, which inherit fds 1 and 2. So, as `crow acp`
keeps stdout for the protocol, `crow run` keeps stdout and stderr for the view: the view gets private
copies of both (a Screen), and fds 1 and 2 become one pipe that a thread drains line by line into
crow.log, or onto the screen with -v (the lines a `crow acp` child used to write on its stderr).
A thread, not the event loop, drains it: a burst of logs written from the loop could fill the pipe
and block the loop that should read it.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TextIO

from crow.exits import USAGE, Exit
from crow_acp.util.secrets import redact

log = logging.getLogger("crow.run")
LINE_LIMIT = 64 * 1024
"""A longer line is passed on in pieces of this size: the pipe may carry anything, an endless line too."""
DRAIN_WAIT = 1.0
"""Seconds to wait, at exit, for what is still in the pipe (an MCP server that outlives crow holds it open)."""


@dataclass
class Screen:
    """Where the view writes: the terminal (or pipe, or file) crow run was given."""

    out: TextIO
    err: TextIO


class OutputLines:
    """Hands each line of caught output to the view (with -v) or to crow.log, on the event loop when it runs."""

    def __init__(self, verbose: bool) -> None:
        self.verbose = verbose
        self.show: Callable[[str], None] | None = None
        """The view's log method, once there is a view."""
        self.loop: asyncio.AbstractEventLoop | None = None

    def line(self, raw: bytes) -> None:
        text = redact(raw.decode("utf-8", "replace").rstrip())
        show = self.show
        if not self.verbose or show is None:
            log.info("agent: %s", text)  # MCP servers' stderr and what the agent prints: kept in crow.log
            return
        loop = self.loop
        try:
            if loop is None:
                raise RuntimeError("no event loop")
            loop.call_soon_threadsafe(show, text)  # the view is drawn from the loop only
        except RuntimeError:  # the loop is not running (any more): draw it here
            show(text)


class ScreenStream(io.TextIOWrapper):
    """A stream of the screen whose reader may go away (`crow run ... | head -2`): from then on what is
    written goes to /dev/null, and `reader_gone` is called, once, to stop the turn."""

    def __init__(self, fd: int, like: TextIO, reader_gone: Callable[[], None]) -> None:
        super().__init__(io.FileIO(fd, "w"), encoding=like.encoding, errors=like.errors, line_buffering=True)
        self._reader_gone = reader_gone

    def write(self, text: str) -> int:
        try:
            return super().write(text)
        except BrokenPipeError:
            self._gone()
            return len(text)

    def flush(self) -> None:
        try:
            super().flush()
        except BrokenPipeError:
            self._gone()

    def _gone(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self.fileno())  # what is still buffered, and all that follows, goes nowhere quietly
        os.close(devnull)
        self._reader_gone()


@contextmanager
def caught_output(lines: OutputLines, reader_gone: Callable[[], None]) -> Iterator[Screen]:
    """Point fds 1 and 2 at a pipe drained into `lines`; yield the original stdout and stderr for the view.
    `reader_gone` is called when the reader of either goes away (a pipe closed early)."""
    if sys.stdout is None or sys.stderr is None:  # `crow run ... >&-`: Python has no stream for a closed fd
        raise Exit(USAGE, "crow run writes its answer to stdout and the rest to stderr; both must be open")
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = os.dup(1), os.dup(2)
    read_end, write_end = os.pipe()
    os.set_inheritable(read_end, False)
    os.dup2(write_end, 1)
    os.dup2(write_end, 2)
    os.close(write_end)
    drain = threading.Thread(target=_drain, args=(read_end, lines), daemon=True, name="crow-run-output")
    drain.start()
    screen = Screen(
        ScreenStream(os.dup(saved[0]), sys.stdout, reader_gone), ScreenStream(os.dup(saved[1]), sys.stderr, reader_gone)
    )
    try:
        yield screen
    finally:
        for stream in (sys.stdout, sys.stderr, screen.out, screen.err):
            stream.flush()
        os.dup2(saved[0], 1)  # this process's own writes end the pipe; children that still hold it, not
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
        drain.join(DRAIN_WAIT)
        screen.out.close()
        screen.err.close()


def _drain(fd: int, lines: OutputLines) -> None:
    pending = b""
    try:
        while chunk := os.read(fd, 1 << 16):
            *complete, pending = (pending + chunk).split(b"\n")
            for line in complete:
                lines.line(line)
            while len(pending) > LINE_LIMIT:
                lines.line(pending[:LINE_LIMIT])
                pending = pending[LINE_LIMIT:]
        if pending:
            lines.line(pending)
    finally:
        os.close(fd)
