"""Serving an agent over stdio, with stdout kept for the protocol alone.

One stray byte on stdout (a print, a child process, a library banner) can hang the editor. So
fd 1 is pointed at stderr at startup, and the protocol writes to a private copy of it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any

STDIN_LIMIT = 50 * 1024 * 1024
log = logging.getLogger(__name__)


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def log_level() -> tuple[str, str | None]:
    """CROW_LOG_LEVEL, or INFO and a warning to show when it names no level."""
    raw = os.environ.get("CROW_LOG_LEVEL", "").strip()
    if not raw or raw.upper() in LOG_LEVELS:
        return raw.upper() or "INFO", None
    return "INFO", f"CROW_LOG_LEVEL={raw!r} is not one of {', '.join(LOG_LEVELS)}; using INFO"


def configure_logging(log_dir: Path, *, stderr: bool = True) -> None:
    """Log to $CROW_HOME/logs/crow.log, and to stderr unless a terminal UI owns the screen."""
    level, problem = log_level()
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)] if stderr else []
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
        handlers.append(RotatingFileHandler(log_dir / "crow.log", maxBytes=5_000_000, backupCount=3))
    except OSError as exc:
        sys.stderr.write(f"crow: cannot write logs to {log_dir}: {exc}\n")
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", handlers=handlers)
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # one INFO line per model request is noise
    if problem:
        log.warning(problem)


def protect_stdout() -> int:
    """Point fd 1 and sys.stdout at stderr; return a private fd for the protocol."""
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


class JsonObjectLines(asyncio.StreamReader):
    """Stdin without lines that cannot be a JSON-RPC message.

    The SDK logs and skips a line that is not JSON, but any other JSON value (`[1]`, `42`, `"x"`)
    kills its receive loop, and crow would never answer the editor again.
    """

    _continued = False

    async def readuntil(self, separator: bytes = b"\n") -> bytes:
        while True:
            try:
                line = await super().readuntil(separator)
            except asyncio.LimitOverrunError:
                self._continued = True  # the SDK reads an overlong line in pieces: pass the rest on
                raise
            continued, self._continued = self._continued, False
            if continued or line.lstrip()[:1] in (b"{", b""):
                return line
            log.warning("ignored a line that is not a JSON-RPC message: %.200r", line)


async def stdio_streams(protocol_fd: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = JsonObjectLines(limit=STDIN_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    pipe = os.fdopen(protocol_fd, "wb", buffering=0)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, pipe)
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


async def serve_stdio(agent: Any, protocol_fd: int) -> None:
    from acp import run_agent

    reader, writer = await stdio_streams(protocol_fd)
    try:
        await run_agent(agent, writer, reader, use_unstable_protocol=True)
    finally:
        await agent.shutdown()


def serve(agent: Any) -> None:
    """Serve `agent` to the editor on stdin/stdout until the editor closes stdin."""
    protocol_fd = protect_stdout()
    asyncio.run(serve_stdio(agent, protocol_fd))
