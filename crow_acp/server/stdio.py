"""Serving an agent over stdio, with stdout kept for the protocol alone.

One stray byte on stdout (a print, a child process, a library banner) can hang the editor. So
fd 1 is pointed at stderr at startup, and the protocol writes to a private copy of it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

from ..acp.rpc.wire import READ_PIECE, StdioTransport
from .shutdown import SIGNALS, StopSignals, first_of, stop_serving
from .stdin import readable_stdin

log = logging.getLogger(__name__)


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def log_level() -> tuple[str, str | None]:
    """CROW_LOG_LEVEL, or INFO and a warning to show when it names no level."""
    raw = os.environ.get("CROW_LOG_LEVEL", "").strip()
    if not raw or raw.upper() in LOG_LEVELS:
        return raw.upper() or "INFO", None
    return "INFO", f"CROW_LOG_LEVEL={raw!r} is not one of {', '.join(LOG_LEVELS)}; using INFO"


def configure_logging(log_dir: Path, *, stderr: bool = True, fmt: str = "text") -> None:
    """Log to $CROW_HOME/logs/crow.log, and to stderr unless a terminal UI owns the screen; `fmt` "json":
    one JSON object per line (telemetry/log_json.py)."""
    level, problem = log_level()
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)] if stderr else []
    try:
        from ..config.private import PrivateLog

        handlers.append(PrivateLog(log_dir, max_bytes=5_000_000, backups=3))  # 0600 in a 0700 directory
    except OSError as exc:
        sys.stderr.write(f"crow: cannot write logs to {log_dir}: {exc}\n")
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", handlers=handlers)
    if fmt not in ("text", "json"):  # only CROW_LOG_FORMAT can be wrong: the flag and the config are checked
        log.warning("CROW_LOG_FORMAT=%r is not text or json; using text", fmt[:40])
    if fmt == "json":
        from ..telemetry.log_json import JsonFormatter

        for handler in handlers:
            handler.setFormatter(JsonFormatter())
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # one INFO line per model request is noise
    if problem:
        log.warning(problem)


def protect_stdout() -> int:
    """Point fd 1 and sys.stdout at stderr; return a private fd for the protocol."""
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


async def stdio_streams(protocol_fd: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=READ_PIECE)
    stdin = os.fdopen(readable_stdin(), "rb", buffering=0, closefd=False)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    pipe = os.fdopen(protocol_fd, "wb", buffering=0)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, pipe)
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


async def serve_stdio(agent: Any, protocol_fd: int) -> None:
    """Serve until stdin closes or a signal arrives, then shut down in order (see shutdown.py)."""
    from ..acp.rpc.door import attach
    from ..acp.rpc.routes import agent_connection

    signals = StopSignals()
    reader, writer = await stdio_streams(protocol_fd)
    wire = StdioTransport(reader, writer)
    connection = agent_connection(agent, wire, listening=False)
    attach(connection, wire)  # text chunks skip the SDK's models (acp/rpc/door.py)
    listening = asyncio.create_task(connection.listen())
    try:
        await first_of(asyncio.shield(listening), signals.first.wait(), wire.gone.wait())
        from ..core.cut_turn import crow_stops  # here: core is not on the start-up path

        crow_stops()  # the process ends: what is cancelled now is recorded as cut, for /continue (cut_turn.py)
        await stop_serving(agent, wire, connection, signals.second)
    finally:
        listening.cancel()
        signals.remove()


def serve(agent: Any, protocol_fd: int | None = None) -> None:
    """Serve `agent` to the editor on stdin/stdout until the editor closes stdin or signals crow.

    Pass the fd from protect_stdout() when stdout had to be protected earlier (while loading the agent)."""
    for sig in SIGNALS:  # until the event loop takes them over: a signal now still exits cleanly
        signal.signal(sig, _exit_now)
    if protocol_fd is None:
        protocol_fd = protect_stdout()
    asyncio.run(serve_stdio(agent, protocol_fd))


def _exit_now(signum: int, frame: Any) -> None:
    raise SystemExit(0)
